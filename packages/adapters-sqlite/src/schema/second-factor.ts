import { sql } from 'drizzle-orm';
import { check, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { accounts } from './accounts.js';

/**
 * Per-account wrong second-factor codes (core's TotpThrottleState): the times of the most recent
 * ones as a JSON array of epoch milliseconds, at most a handful. No row: none recorded.
 */
export const totpThrottles = sqliteTable('totp_throttles', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id),
  wrongCodesAt: text('wrong_codes_at').notNull(),
});

/** The deployment record: one row (id 1), written at the first start, checked at every start. */
export const deployment = sqliteTable(
  'deployment',
  {
    id: integer('id').primaryKey(),
    keyFingerprint: text('key_fingerprint').notNull(),
    issuer: text('issuer').notNull(),
    issuerConfigured: integer('issuer_configured', { mode: 'boolean' }).notNull(),
    recordedAt: integer('recorded_at').notNull(),
  },
  (t) => [check('deployment_single_row', sql`${t.id} = 1`)],
);

/**
 * Named leases of periodic jobs (core's LeaseRecord): who runs the job now, until when (epoch ms).
 * No row: nobody holds it.
 */
export const leases = sqliteTable('leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  expiresAt: integer('expires_at').notNull(),
});
