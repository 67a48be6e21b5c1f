import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

// Times are integer milliseconds since the epoch; ids are UUIDv7 text.

export const accounts = sqliteTable('accounts', {
  id: text('id').primaryKey(),
  address: text('address'),
  addressKey: text('address_key').unique(),
  passwordHash: text('password_hash'),
  displayName: text('display_name'),
  createdAt: integer('created_at').notNull(),
  lockedAt: integer('locked_at'),
  /** Password change, revoke-all, recovery or lock: what was in flight before it is ended (core's outlivesCredentialChange). */
  credentialsChangedAt: integer('credentials_changed_at'),
  /** When the account was deleted: its address, password and display name are cleared, the row stays so its handle stays retired. */
  deletedAt: integer('deleted_at'),
});

export const sessions = sqliteTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    tokenHash: text('token_hash').notNull().unique(),
    cohortHash: text('cohort_hash'),
    createdAt: integer('created_at').notNull(),
    refreshedAt: integer('refreshed_at').notNull(),
    lastUsedAt: integer('last_used_at').notNull(),
    accessFloor: integer('access_floor').notNull(),
    closedAt: integer('closed_at'),
    method: text('method', { enum: ['password', 'oidc'] })
      .notNull()
      .default('password'),
    /** Last proof of a credential on this session; 0 (never recently) for sessions from before the column. */
    authenticatedAt: integer('authenticated_at').notNull().default(0),
  },
  (t) => [index('sessions_account_idx').on(t.accountId)],
);

export const deviceCohorts = sqliteTable(
  'device_cohorts',
  {
    userId: text('user_id')
      .notNull()
      .references(() => accounts.id),
    cohortHash: text('cohort_hash').notNull(),
    firstSeen: integer('first_seen').notNull(),
    lastSeen: integer('last_seen').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.cohortHash] })],
);

export const signingKeys = sqliteTable('signing_keys', {
  kid: text('kid').primaryKey(),
  privateKey: text('private_key').notNull(),
  publicKey: text('public_key').notNull(),
  createdAt: integer('created_at').notNull(),
  retiredAt: integer('retired_at'),
});
