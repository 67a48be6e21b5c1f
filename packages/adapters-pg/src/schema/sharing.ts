import { bigint, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

// Mirrors adapters-sqlite/src/schema/sharing.ts column for column.
const n = (name: string) => bigint(name, { mode: 'number' });

/** A sponsored account and the registered account that pays for it. */
export const sponsoredAccounts = pgTable(
  'sponsored_accounts',
  {
    accountId: text('account_id').primaryKey(),
    sponsorId: text('sponsor_id').notNull(),
    createdAt: n('created_at').notNull(),
  },
  (t) => [index('sponsored_accounts_sponsor_idx').on(t.sponsorId)],
);

/** Who may act as a sponsored account (its sponsor among them). */
export const sponsoredOwners = pgTable(
  'sponsored_owners',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => sponsoredAccounts.accountId),
    ownerId: text('owner_id').notNull(),
    seq: integer('seq').notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.ownerId] }), index('sponsored_owners_owner_idx').on(t.ownerId)],
);

/**
 * Share links and web-upload links, keyed by the hash of their id (a bearer capability): the id
 * itself is only in `sealed_id`, sealed under the server key, so a copy of the database reaches none.
 */
export const links = pgTable(
  'links',
  {
    idHash: text('id_hash').primaryKey(),
    /** Null only on a row an earlier build wrote (id_hash then holds the clear id) until a start seals it. */
    sealedId: text('sealed_id'),
    ownerId: text('owner_id').notNull(),
    kind: text('kind', { enum: ['share', 'upload'] }).notNull(),
    albumId: text('album_id'),
    /** JSON array of asset ids (share links). */
    assetIds: text('asset_ids').notNull(),
    wrappedKey: text('wrapped_key'),
    sealKey: text('seal_key'),
    maxBytes: n('max_bytes'),
    acceptedBytes: n('accepted_bytes').notNull().default(0),
    createdAt: n('created_at').notNull(),
    expiresAt: n('expires_at'),
    revokedAt: n('revoked_at'),
    /** The session that created the link, shown to its owner (null for links made before it was kept). */
    createdSessionId: text('created_session_id'),
  },
  (t) => [index('links_owner_idx').on(t.ownerId)],
);

/** Guest drops: the upload session opened through a link and the hash of its one-drop token. */
export const linkDrops = pgTable(
  'link_drops',
  {
    uploadId: text('upload_id').primaryKey(),
    linkIdHash: text('link_id_hash')
      .notNull()
      .references(() => links.idHash),
    ownerId: text('owner_id').notNull(),
    tokenHash: text('token_hash').notNull(),
    declaredSize: n('declared_size').notNull(),
    createdAt: n('created_at').notNull(),
  },
  (t) => [index('link_drops_link_idx').on(t.linkIdHash)],
);
