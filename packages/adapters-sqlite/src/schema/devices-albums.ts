import { blob, index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { accounts } from './accounts.js';

// Times are integer milliseconds since the epoch, except added_at: unix seconds, as signed.

/** The latest accepted directory per account; its identity_key is the account's identity anchor. */
export const deviceDirectories = sqliteTable('device_directories', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id),
  identityKey: blob('identity_key', { mode: 'buffer' }).notNull(),
  seq: integer('seq').notNull(),
  /** The signed CBOR exactly as accepted; GET returns it. */
  body: blob('body', { mode: 'buffer' }).notNull(),
  acceptedAt: integer('accepted_at').notNull(),
});

/** The devices of the latest directory, replaced whole on each publication. */
export const directoryDevices = sqliteTable(
  'directory_devices',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => deviceDirectories.accountId),
    deviceId: text('device_id').notNull(),
    position: integer('position').notNull(),
    ed25519: blob('ed25519', { mode: 'buffer' }).notNull(),
    mldsa65: blob('mldsa65', { mode: 'buffer' }).notNull(),
    addedAt: integer('added_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.deviceId] })],
);

/** Revoke-all challenges by SHA-256 of the challenge bytes; consumed by deletion. */
export const revokeAllChallenges = sqliteTable(
  'revoke_all_challenges',
  {
    challengeHash: text('challenge_hash').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('revoke_all_challenges_expires_idx').on(t.expiresAt)],
);

/** Albums with their immutable pin and the upgrade columns (the live intent, if not expired). */
export const albums = sqliteTable(
  'albums',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    protocolVersion: text('protocol_version').notNull(),
    createdAt: integer('created_at').notNull(),
    upgradePendingTo: text('upgrade_pending_to'),
    intentId: text('intent_id'),
    upgradeReceivedAt: integer('upgrade_received_at'),
    upgradeExpiresAt: integer('upgrade_expires_at'),
  },
  (t) => [index('albums_account_idx').on(t.accountId)],
);

/** Every intent ever accepted: intent_id is the idempotency key and is never reused. */
export const albumUpgradeIntents = sqliteTable(
  'album_upgrade_intents',
  {
    intentId: text('intent_id').primaryKey(),
    albumId: text('album_id')
      .notNull()
      .references(() => albums.id),
    fromVersion: text('from_version').notNull(),
    toVersion: text('to_version').notNull(),
    proposerDevice: text('proposer_device').notNull(),
    deadlineS: integer('deadline_s').notNull(),
    receivedAt: integer('received_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    intentCbor: blob('intent_cbor', { mode: 'buffer' }).notNull(),
  },
  (t) => [index('album_upgrade_intents_album_idx').on(t.albumId)],
);
