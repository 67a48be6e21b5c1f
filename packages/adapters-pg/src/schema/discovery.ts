import { bigint, boolean, index, pgTable, text } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.js';

// Mirrors adapters-sqlite/src/schema/discovery.ts column for column.
const ms = (name: string) => bigint(name, { mode: 'number' });

/** One row per account that claimed a handle; `user` is unique. Rows are never moved (v1). */
export const handles = pgTable('handles', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id),
  user: text('user_name').notNull().unique(),
  published: boolean('published').notNull().default(false),
  claimedAt: ms('claimed_at').notNull(),
  /** Set when its account was deleted: the row stays so the name is never claimed again, and no lookup answers it. */
  retiredAt: ms('retired_at'),
});

/** The per-peer token bucket (level in units, see core's bucket), shared by every process. */
export const peerBuckets = pgTable('peer_buckets', {
  peer: text('peer').primaryKey(),
  level: bigint('level', { mode: 'number' }).notNull(),
  updatedAt: ms('updated_at').notNull(),
});

/** Capability tokens this server minted, so they can be revoked one by one or per peer. */
export const mintedCapabilities = pgTable(
  'minted_capabilities',
  {
    jti: text('jti').primaryKey(),
    peer: text('peer').notNull(),
    /** The local account it was minted on behalf of, so deleting the account revokes it (null: minted before this was kept). */
    accountId: text('account_id'),
    issuedAt: ms('issued_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
    revokedAt: ms('revoked_at'),
  },
  (t) => [
    index('minted_capabilities_peer_idx').on(t.peer, t.expiresAt),
    index('minted_capabilities_revoked_idx').on(t.revokedAt),
    index('minted_capabilities_account_idx').on(t.accountId),
  ],
);
