import { bigint, index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

// Mirrors adapters-sqlite/src/schema/accounts.ts column for column. Times are milliseconds since the
// epoch in bigint columns read back as JS numbers (exact up to 2^53, far beyond any real instant);
// ids are UUIDv7 text, as in SQLite, so rows move between the two adapters unchanged.
const ms = (name: string) => bigint(name, { mode: 'number' });

export const accounts = pgTable('accounts', {
  id: text('id').primaryKey(),
  address: text('address'),
  addressKey: text('address_key').unique(),
  passwordHash: text('password_hash'),
  displayName: text('display_name'),
  createdAt: ms('created_at').notNull(),
  lockedAt: ms('locked_at'),
  /** Password change, revoke-all, recovery or lock: what was in flight before it is ended (core's outlivesCredentialChange). */
  credentialsChangedAt: ms('credentials_changed_at'),
  /** When the account was deleted: its address, password and display name are cleared, the row stays so its handle stays retired. */
  deletedAt: ms('deleted_at'),
});

export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    tokenHash: text('token_hash').notNull().unique(),
    cohortHash: text('cohort_hash'),
    createdAt: ms('created_at').notNull(),
    refreshedAt: ms('refreshed_at').notNull(),
    lastUsedAt: ms('last_used_at').notNull(),
    accessFloor: ms('access_floor').notNull(),
    closedAt: ms('closed_at'),
    method: text('method', { enum: ['password', 'oidc'] })
      .notNull()
      .default('password'),
    /** Last proof of a credential on this session; 0 (never recently) for sessions from before the column. */
    authenticatedAt: ms('authenticated_at').notNull().default(0),
  },
  (t) => [index('sessions_account_idx').on(t.accountId)],
);

export const deviceCohorts = pgTable(
  'device_cohorts',
  {
    userId: text('user_id')
      .notNull()
      .references(() => accounts.id),
    cohortHash: text('cohort_hash').notNull(),
    firstSeen: ms('first_seen').notNull(),
    lastSeen: ms('last_seen').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.cohortHash] })],
);

export const signingKeys = pgTable('signing_keys', {
  kid: text('kid').primaryKey(),
  privateKey: text('private_key').notNull(),
  publicKey: text('public_key').notNull(),
  createdAt: ms('created_at').notNull(),
  retiredAt: ms('retired_at'),
});
