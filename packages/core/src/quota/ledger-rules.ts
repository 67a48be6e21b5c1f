import type { QuotaAccountRecord } from '../ports/quota-ledger.js';
import { effectiveLimits, federatedBudget, nextHardSince, type LedgerFacts, type QuotaPolicy } from './machine.js';

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
  return nextHardSince({ ...record, limits: effectiveLimits(record.limits, policy) }, now);
}

/** A zero row: an account the ledger has never charged. */
export function emptyLedgerRecord(accountId: string): QuotaAccountRecord {
  return { accountId, charged: 0, reserved: 0, limits: null, hardSince: null, suspendedAt: null, sponsorId: null };
}

export type FederatedCacheDecision = 'merged' | 'cached' | 'over_budget';

/**
 * Caching a blob received from a peer for a receiver: a hash the receiver already references, or
 * that is stored for anyone (dedup is global), is a merge; otherwise the receiver's bytes from
 * that peer plus this blob must stay within the per-(receiver, peer) budget.
 */
export function decideFederatedCache(
  facts: { readonly referenced: boolean; readonly stored: boolean; readonly spentFromPeer: number; readonly receiver: QuotaAccountRecord },
  size: number,
  policy: QuotaPolicy,
): FederatedCacheDecision {
  if (facts.referenced || facts.stored) return 'merged';
  const budget = federatedBudget(effectiveLimits(facts.receiver.limits, policy), policy);
  return budget !== null && facts.spentFromPeer + size > budget ? 'over_budget' : 'cached';
}
