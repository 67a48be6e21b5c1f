import type { QuotaAccountRecord } from '../ports/quota-ledger.js';
import { effectiveLimits, type QuotaLimits, type QuotaPolicy } from '../quota/machine.js';

/**
 * The bytes budget of the peer blob cache: how much a receiver may hold of blobs that came from one
 * peer (a federated fill, or a cached federated blob). A share of the receiver's hard limit, so one
 * peer cannot fill an account. Not the per-peer request budget of federated lookups: that is
 * peer-rate-limit/.
 */

/** The per-(receiver, peer) federated cache budget; null when the hard limit is unlimited. */
export function federatedBudget(limits: QuotaLimits, policy: QuotaPolicy): number | null {
  return limits.hard === null ? null : Math.floor(limits.hard * policy.federatedShare);
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
