import type { QuotaAccountRecord } from '../ports/quota-ledger.js';
import { effectiveLimits, nextHardSince, type LedgerFacts, type QuotaPolicy } from './machine.js';

/**
 * Rules every ledger writer applies inside its own transaction, so the stores hold no copy of them:
 * who pays, what the facts of a row are under the deployment policy, and what `hard_since` must
 * become after the row moved.
 */

/** Whom the ledger charges for an account's writes: its sponsor when it has one, else itself. */
export function payerIdOf(record: Pick<QuotaAccountRecord, 'accountId' | 'sponsorId'>): string {
  return record.sponsorId ?? record.accountId;
}

/** The decision inputs of one ledger row under the policy (the account's own limits, else the defaults). */
export function ledgerFacts(record: QuotaAccountRecord, policy: QuotaPolicy): LedgerFacts {
  return {
    charged: record.charged,
    reserved: record.reserved,
    hardSince: record.hardSince,
    suspended: record.suspendedAt !== null,
    limits: effectiveLimits(record.limits, policy),
  };
}

/** `hard_since` for the row as it now stands (set when used reaches the hard limit, cleared below it). */
export function settledHardSince(record: QuotaAccountRecord, policy: QuotaPolicy, now: number): number | null {
  return nextHardSince(
    {
      charged: record.charged,
      reserved: record.reserved,
      hardSince: record.hardSince,
      limits: effectiveLimits(record.limits, policy),
    },
    now,
  );
}

/** A payer's facts as of `now`, its `hard_since` settled first: what a write's admission judges. */
export function settledLedgerFacts(record: QuotaAccountRecord, policy: QuotaPolicy, now: number): LedgerFacts {
  return ledgerFacts(ledgerRecordWith(record, record.reserved, settledHardSince(record, policy, now)), policy);
}

/**
 * A ledger row with its reservations and `hard_since` changed. Written out field by field, as every
 * copy of a row on the upload path is: a spread followed by new fields gave each copy a shape V8 had
 * to work out again, on its slow path, once per upload.
 */
export function ledgerRecordWith(
  record: QuotaAccountRecord,
  reserved: number,
  hardSince: number | null,
): QuotaAccountRecord {
  return {
    accountId: record.accountId,
    charged: record.charged,
    reserved,
    limits: record.limits,
    hardSince,
    suspendedAt: record.suspendedAt,
    sponsorId: record.sponsorId,
    trashActivityAt: record.trashActivityAt,
  };
}

/** A zero row: an account the ledger has never charged. */
export function emptyLedgerRecord(accountId: string): QuotaAccountRecord {
  return {
    accountId,
    charged: 0,
    reserved: 0,
    limits: null,
    hardSince: null,
    suspendedAt: null,
    sponsorId: null,
    trashActivityAt: null,
  };
}
