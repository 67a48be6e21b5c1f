import { bigint, customType, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.js';

// Mirrors adapters-sqlite/src/schema/devices-albums.ts column for column. Times are milliseconds in
// bigint, except added_at: unix seconds, as signed. Byte strings are bytea.
const ms = (name: string) => bigint(name, { mode: 'number' });

/** bytea read back as a Buffer (node-postgres and PGlite both hand back bytes for bytea). */
export const bytea = customType<{ data: Buffer; driverData: Buffer | Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (v) => Buffer.from(v),
});

/** The latest accepted directory per account; its identity_key is the account's identity anchor. */
export const deviceDirectories = pgTable('device_directories', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id),
  identityKey: bytea('identity_key').notNull(),
  seq: bigint('seq', { mode: 'number' }).notNull(),
  /** The signed CBOR exactly as accepted; GET returns it. */
  body: bytea('body').notNull(),
  acceptedAt: ms('accepted_at').notNull(),
});

/** The devices of the latest directory, replaced whole on each publication. */
export const directoryDevices = pgTable(
  'directory_devices',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => deviceDirectories.accountId),
    deviceId: text('device_id').notNull(),
    position: integer('position').notNull(),
    ed25519: bytea('ed25519').notNull(),
    mldsa65: bytea('mldsa65').notNull(),
    addedAt: bigint('added_at', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.deviceId] })],
);

/** Revoke-all challenges by SHA-256 of the challenge bytes; consumed by deletion. */
export const revokeAllChallenges = pgTable(
  'revoke_all_challenges',
  {
    challengeHash: text('challenge_hash').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    expiresAt: ms('expires_at').notNull(),
  },
  (t) => [index('revoke_all_challenges_expires_idx').on(t.expiresAt)],
);

/** Albums with their immutable pin and the upgrade columns (the live intent, if not expired). */
export const albums = pgTable(
  'albums',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    protocolVersion: text('protocol_version').notNull(),
    createdAt: ms('created_at').notNull(),
    upgradePendingTo: text('upgrade_pending_to'),
    intentId: text('intent_id'),
    upgradeReceivedAt: ms('upgrade_received_at'),
    upgradeExpiresAt: ms('upgrade_expires_at'),
  },
  (t) => [index('albums_account_idx').on(t.accountId)],
);

/** Every intent ever accepted: intent_id is the idempotency key and is never reused. */
export const albumUpgradeIntents = pgTable(
  'album_upgrade_intents',
  {
    intentId: text('intent_id').primaryKey(),
    albumId: text('album_id')
      .notNull()
      .references(() => albums.id),
    fromVersion: text('from_version').notNull(),
    toVersion: text('to_version').notNull(),
    proposerDevice: text('proposer_device').notNull(),
    deadlineS: bigint('deadline_s', { mode: 'number' }).notNull(),
    receivedAt: ms('received_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
    intentCbor: bytea('intent_cbor').notNull(),
  },
  (t) => [index('album_upgrade_intents_album_idx').on(t.albumId)],
);
