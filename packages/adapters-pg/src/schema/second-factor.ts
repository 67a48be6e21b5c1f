import { sql } from 'drizzle-orm';
import { bigint, boolean, check, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.js';

// Mirrors adapters-sqlite/src/schema/second-factor.ts column for column.

/**
 * Per-account wrong second-factor codes (core's TotpThrottleState): the times of the most recent
 * ones as a JSON array of epoch milliseconds, at most a handful. No row: none recorded.
 */
export const totpThrottles = pgTable('totp_throttles', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id),
  wrongCodesAt: text('wrong_codes_at').notNull(),
});

/** The deployment record: one row (id 1), written at the first start, checked at every start. */
export const deployment = pgTable(
  'deployment',
  {
    id: integer('id').primaryKey(),
    keyFingerprint: text('key_fingerprint').notNull(),
    issuer: text('issuer').notNull(),
    issuerConfigured: boolean('issuer_configured').notNull(),
    recordedAt: bigint('recorded_at', { mode: 'number' }).notNull(),
  },
  (t) => [check('deployment_single_row', sql`${t.id} = 1`)],
);

/**
 * Named leases of periodic jobs (core's LeaseRecord): who runs the job now, until when (epoch ms).
 * No row: nobody holds it.
 */
export const leases = pgTable('leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  expiresAt: bigint('expires_at', { mode: 'number' }).notNull(),
});
