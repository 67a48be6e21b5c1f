import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { accounts } from './accounts.js';

/** One row per account that claimed a handle; `user` is unique. Rows are never moved (v1). */
export const handles = sqliteTable('handles', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id),
  user: text('user_name').notNull().unique(),
  published: integer('published', { mode: 'boolean' }).notNull().default(false),
  claimedAt: integer('claimed_at').notNull(),
  /** Set when its account was deleted: the row stays so the name is never claimed again, and no lookup answers it. */
  retiredAt: integer('retired_at'),
});

/** The per-peer token bucket (level in units, see core's bucket), shared by every process. */
export const peerBuckets = sqliteTable('peer_buckets', {
  peer: text('peer').primaryKey(),
  level: integer('level').notNull(),
  updatedAt: integer('updated_at').notNull(),
});

/** Capability tokens this server minted, so they can be revoked one by one or per peer. */
export const mintedCapabilities = sqliteTable(
  'minted_capabilities',
  {
    jti: text('jti').primaryKey(),
    peer: text('peer').notNull(),
    /** The local account it was minted on behalf of, so deleting the account revokes it (null: minted before this was kept). */
    accountId: text('account_id'),
    issuedAt: integer('issued_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    revokedAt: integer('revoked_at'),
  },
  (t) => [
    index('minted_capabilities_peer_idx').on(t.peer, t.expiresAt),
    index('minted_capabilities_revoked_idx').on(t.revokedAt),
    index('minted_capabilities_account_idx').on(t.accountId),
  ],
);
