import { bigint, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

// Mirrors adapters-sqlite/src/schema/records.ts column for column.
const ms = (name: string) => bigint(name, { mode: 'number' });

/** Protocol deprecation announcements (`deprecate` CLI). Rows are only ever inserted. */
export const deprecations = pgTable(
  'deprecations',
  {
    minProtocolVersion: text('min_protocol_version').notNull(),
    effectiveAt: ms('effective_at').notNull(),
    announcedAt: ms('announced_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.minProtocolVersion, t.effectiveAt] })],
);

/** Storage-attestation keys (their own ring, not the access-token keys). */
export const attestationKeys = pgTable('attestation_keys', {
  kid: text('kid').primaryKey(),
  privateKey: text('private_key').notNull(),
  publicKey: text('public_key').notNull(),
  createdAt: ms('created_at').notNull(),
  retiredAt: ms('retired_at'),
});

/**
 * The hash-chained attestation key history. The store only ever inserts here (after core checks
 * the new entry extends the chain); the chain is re-verified at every start.
 */
export const attestationHistory = pgTable('attestation_history', {
  seq: integer('seq').primaryKey(),
  kid: text('kid').notNull().unique(),
  publicKey: text('public_key').notNull(),
  addedAt: bigint('added_at', { mode: 'number' }).notNull(),
  prev: text('prev').notNull(),
  hash: text('hash').notNull().unique(),
  sig: text('sig').notNull(),
});

/** Who may register under SVC_REGISTRATION=allowlist: address keys and `@domain`s, as core keys them. */
export const registrationAllowlist = pgTable('registration_allowlist', {
  entry: text('entry').primaryKey(),
  addedAt: ms('added_at').notNull(),
});
