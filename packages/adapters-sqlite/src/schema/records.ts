import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Protocol deprecation announcements (`deprecate` CLI). Rows are only ever inserted. */
export const deprecations = sqliteTable(
  'deprecations',
  {
    minProtocolVersion: text('min_protocol_version').notNull(),
    effectiveAt: integer('effective_at').notNull(),
    announcedAt: integer('announced_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.minProtocolVersion, t.effectiveAt] })],
);

/** Storage-attestation keys (their own ring, not the access-token keys). */
export const attestationKeys = sqliteTable('attestation_keys', {
  kid: text('kid').primaryKey(),
  privateKey: text('private_key').notNull(),
  publicKey: text('public_key').notNull(),
  createdAt: integer('created_at').notNull(),
  retiredAt: integer('retired_at'),
});

/**
 * The hash-chained attestation key history. The store only ever inserts here (after core checks
 * the new entry extends the chain); the chain is re-verified at every start.
 */
export const attestationHistory = sqliteTable('attestation_history', {
  seq: integer('seq').primaryKey(),
  kid: text('kid').notNull().unique(),
  publicKey: text('public_key').notNull(),
  addedAt: integer('added_at').notNull(),
  prev: text('prev').notNull(),
  hash: text('hash').notNull().unique(),
  sig: text('sig').notNull(),
});

/** Who may register under SVC_REGISTRATION=allowlist: address keys and `@domain`s, as core keys them. */
export const registrationAllowlist = sqliteTable('registration_allowlist', {
  entry: text('entry').primaryKey(),
  addedAt: integer('added_at').notNull(),
});
