import { bigint, bigserial, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';

/**
 * Core's OPEN_STATES as the predicate of a partial index (drizzle-kit loads this file outside the
 * workspace's ESM, so it cannot import core; a test holds the two equal). Open sessions only:
 * expiring a payer's lapsed sessions never walks its finished ones.
 */
export const OPEN_STATE_LIST = "('Pending', 'Uploading', 'WaitingForProcessing')";
const OPEN_ONLY = sql.raw(`state IN ${OPEN_STATE_LIST}`);

// Mirrors adapters-sqlite/src/schema/quota.ts column for column. Sizes are bytes and times
// milliseconds, both bigint read back as JS numbers (sizes are capped at 2^53-1 by the API).
const n = (name: string) => bigint(name, { mode: 'number' });
const KINDS = ['original', 'derivative', 'metadata', 'provenance'] as const;
const UPLOAD_KINDS = [...KINDS, 'federated'] as const;

/** One row per paying account: running counters (charged, reserved, open_uploads) and the operator's levers. */
export const quotaAccounts = pgTable('quota_accounts', {
  accountId: text('account_id').primaryKey(),
  charged: n('charged').notNull().default(0),
  reserved: n('reserved').notNull().default(0),
  /**
   * How many of the sessions this account pays for are in an open state (lapsed ones too, until
   * expired): the cap on open sessions reads it instead of counting them, which grew with the pile.
   * It moves wherever `reserved` moves, by the number of sessions that opened or left an open state.
   */
  openUploads: integer('open_uploads').notNull().default(0),
  /** 1 when an operator set this account's limits; then a null limit means unlimited. */
  customLimits: integer('custom_limits').notNull().default(0),
  softLimit: n('soft_limit'),
  hardLimit: n('hard_limit'),
  hardSince: n('hard_since'),
  suspendedAt: n('suspended_at'),
  sponsorId: text('sponsor_id'),
  /**
   * When this account last trashed, restored, purged or emptied the trash of one of its assets
   * (set in that change's transaction): its provenance and metadata writes within the follow-up
   * window are admitted as the change's follow-ups (core's admitWrite). Read with the row, so the
   * upload hot path reads no more than before.
   */
  trashActivityAt: n('trash_activity_at'),
});

/** The global content-addressed blob index: dedup is global, the first uploader is charged. */
export const blobs = pgTable(
  'blobs',
  {
    contentHash: text('content_hash').primaryKey(),
    size: n('size').notNull(),
    chargedTo: text('charged_to').notNull(),
    peer: text('peer'),
    storedAt: n('stored_at').notNull(),
  },
  (t) => [index('blobs_charged_to_idx').on(t.chargedTo, t.peer)],
);

export const uploadSessions = pgTable(
  'upload_sessions',
  {
    id: text('id').primaryKey(),
    uploaderId: text('uploader_id').notNull(),
    payerId: text('payer_id').notNull(),
    kind: text('kind', { enum: UPLOAD_KINDS }).notNull(),
    declaredSize: n('declared_size').notNull(),
    contentHash: text('content_hash'),
    /** kind 'federated': the configured peer the blob came from. */
    sourcePeer: text('source_peer'),
    albumId: text('album_id'),
    intentId: text('intent_id'),
    dropLinkIdHash: text('drop_link_id_hash'),
    state: text('state', {
      enum: ['Pending', 'Uploading', 'WaitingForProcessing', 'Completed', 'Merged', 'Cancelled', 'Expired'],
    }).notNull(),
    receivedSize: n('received_size'),
    receivedHash: text('received_hash'),
    assetId: text('asset_id'),
    createdAt: n('created_at').notNull(),
    expiresAt: n('expires_at').notNull(),
  },
  // Every lookup by payer asks for open sessions only, so the partial index is the only payer index:
  // each opening then updates one payer index, not two. Most sessions have no album, and those are
  // left out of the album index (a lookup by album id implies one). Likewise only drops are in the
  // drop-link index, by which revoking a link finds its drops still uploading.
  (t) => [
    index('upload_sessions_open_payer_idx').on(t.payerId, t.expiresAt).where(OPEN_ONLY),
    index('upload_sessions_album_idx').on(t.albumId).where(sql`album_id IS NOT NULL`),
    index('upload_sessions_drop_link_idx').on(t.dropLinkIdHash).where(sql`drop_link_id_hash IS NOT NULL`),
    index('upload_sessions_expiry_idx').on(t.expiresAt),
  ],
);

export const assets = pgTable(
  'assets',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull(),
    uploaderId: text('uploader_id').notNull(),
    state: text('state', { enum: ['live', 'trashed', 'pending_drop'] }).notNull(),
    createdAt: n('created_at').notNull(),
    trashedAt: n('trashed_at'),
    dropExpiresAt: n('drop_expires_at'),
  },
  (t) => [index('assets_owner_idx').on(t.ownerId, t.state), index('assets_drop_idx').on(t.dropExpiresAt)],
);

/** References from assets to blobs; a blob no reference (and no federated cache entry) names is garbage. */
export const assetBlobs = pgTable(
  'asset_blobs',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    assetId: text('asset_id')
      .notNull()
      .references(() => assets.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: KINDS }).notNull(),
    contentHash: text('content_hash').notNull(),
    size: n('size').notNull(),
  },
  (t) => [index('asset_blobs_asset_idx').on(t.assetId), index('asset_blobs_hash_idx').on(t.contentHash)],
);

export const federatedRefs = pgTable(
  'federated_refs',
  {
    receiver: text('receiver').notNull(),
    peer: text('peer').notNull(),
    contentHash: text('content_hash').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.receiver, t.peer, t.contentHash] }),
    index('federated_refs_hash_idx').on(t.contentHash),
  ],
);
