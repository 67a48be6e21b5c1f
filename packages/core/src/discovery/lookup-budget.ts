import { ok, refuse, type Result } from '../errors.js';
import type { BucketDecision } from '../peer-rate-limit/bucket.js';

/**
 * How many handle lookups one account may make per minute (SVC_LOOKUP_RATE when unset), local and
 * forwarded alike. A lookup answers whether a handle exists, published or not, and hands out its
 * keys: unbounded, one account could walk the namespace at a hundred names a second. Sixty a minute
 * is far beyond what a person adding contacts does, and a burst of that many is allowed at once.
 */
export const DEFAULT_LOOKUP_RATE_PER_MINUTE = 60;

/**
 * The token bucket an account's lookups draw from. Buckets share one keyed store with the per-peer
 * federation budget; a peer's key is its base URL, so this prefix can never name a peer.
 */
export function lookupBucketKey(accountId: string): string {
  return `lookup:${accountId}`;
}

/** The person behind a lookup: an owner acting as a sponsored account draws from its own budget. */
export function lookupBudgetHolder(principal: {
  readonly accountId: string;
  readonly actingOwnerId?: string | undefined;
}): string {
  return principal.actingOwnerId ?? principal.accountId;
}

/** A refused draw is 429 with the seconds until the bucket holds a token again. */
export function decideLookupDraw(
  decision: BucketDecision,
  ratePerMinute: number,
): Result<void, 'error.request.too_many'> {
  if (decision.admitted) return ok(undefined);
  return refuse(
    'error.request.too_many',
    `At most ${ratePerMinute} handle lookups a minute per account; try again later.`,
    {
      retry_after_s: decision.retryAfterS,
    },
  );
}
