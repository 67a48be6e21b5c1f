import type { QuotaLimits, QuotaPolicy } from '../quota/machine.js';

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
