import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.js';

// Mirrors adapters-sqlite/src/schema/totp.ts column for column.
const ms = (name: string) => bigint(name, { mode: 'number' });

/** One row per account with a second factor; no row is "None". The secret is sealed by core. */
export const totpEnrollments = pgTable(
  'totp_enrollments',
  {
    accountId: text('account_id')
      .primaryKey()
      .references(() => accounts.id),
    state: text('state', { enum: ['pending', 'confirmed'] }).notNull(),
    sealedSecret: text('sealed_secret').notNull(),
    /** The replay ledger: the highest TOTP step ever accepted (null while pending). */
    highestUsedStep: bigint('highest_used_step', { mode: 'number' }),
    createdAt: ms('created_at').notNull(),
    confirmedAt: ms('confirmed_at'),
  },
  (t) => [check('totp_enrollments_state_check', sql`${t.state} in ('pending', 'confirmed')`)],
);

/** Sign-in challenges, keyed by the SHA-256 of the challenge; deleted when used. */
export const totpChallenges = pgTable(
  'totp_challenges',
  {
    idHash: text('id_hash').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    expiresAt: ms('expires_at').notNull(),
    attempts: integer('attempts').notNull().default(0),
  },
  (t) => [index('totp_challenges_expires_idx').on(t.expiresAt)],
);
