import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// Sponsored accounts, links and drops, federated cache fills. Sizes are bytes, times integer milliseconds.

/** A sponsored account and the registered account that pays for it. */
export const sponsoredAccounts = sqliteTable(
  'sponsored_accounts',
  {
    accountId: text('account_id').primaryKey(),
    sponsorId: text('sponsor_id').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('sponsored_accounts_sponsor_idx').on(t.sponsorId)],
);

/** Who may act as a sponsored account (its sponsor among them). */
export const sponsoredOwners = sqliteTable(
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
export const links = sqliteTable(
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
    maxBytes: integer('max_bytes'),
    acceptedBytes: integer('accepted_bytes').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at'),
    revokedAt: integer('revoked_at'),
    /** The session that created the link, shown to its owner (null for links made before it was kept). */
    createdSessionId: text('created_session_id'),
  },
  (t) => [index('links_owner_idx').on(t.ownerId)],
);

/** Guest drops: the upload session opened through a link and the hash of its one-drop token. */
export const linkDrops = sqliteTable(
  'link_drops',
  {
    uploadId: text('upload_id').primaryKey(),
    linkIdHash: text('link_id_hash')
      .notNull()
      .references(() => links.idHash),
    ownerId: text('owner_id').notNull(),
    tokenHash: text('token_hash').notNull(),
    declaredSize: integer('declared_size').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('link_drops_link_idx').on(t.linkIdHash)],
);
