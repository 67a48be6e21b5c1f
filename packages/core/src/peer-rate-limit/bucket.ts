/**
 * The per-peer request budget of federation: how many lookups a listed peer may send this server
 * (SVC_FEDERATION_RATE a minute), as a token bucket. Not the peer blob cache's bytes budget: that
 * is peer-blob-cache/budget.ts.
 *
 * One pure function of (bucket, now, rate). Every store applies it inside its own transaction,
 * so processes sharing a database share the bucket.
 *
 * Arithmetic is in whole numbers: one token is {@link UNITS_PER_TOKEN} units, and the bucket gains
 * `rate` units per elapsed millisecond, which is exactly `rate` tokens per minute. A full bucket
 * holds `rate` tokens. No floating point, so every process and every database agrees to the unit.
 */

export const UNITS_PER_TOKEN = 60_000;

/** A bucket as stored: its level in units, as of `updatedAt` (ms). */
export interface Bucket {
  readonly level: number;
  readonly updatedAt: number;
}

export interface BucketDecision {
  readonly admitted: boolean;
  /** The bucket to store (after refill, and after the token taken when admitted). */
  readonly bucket: Bucket;
  /** When refused: whole seconds until a token is there (at least 1). 0 when admitted. */
  readonly retryAfterS: number;
}

/** The capacity in units for `rate` tokens a minute. */
export function bucketCapacity(rate: number): number {
  return rate * UNITS_PER_TOKEN;
}

/** A fresh bucket is full. */
export function fullBucket(rate: number, now: number): Bucket {
  return { level: bucketCapacity(rate), updatedAt: now };
}

/**
 * Refills `bucket` for the time since its last update (a clock that went backwards refills
 * nothing and never moves the bucket back), then takes one token if there is one.
 */
export function takeToken(bucket: Bucket | null, now: number, rate: number): BucketDecision {
  if (!Number.isSafeInteger(rate) || rate < 1)
    throw new RangeError('the rate must be a whole number of tokens per minute, at least 1');
  const capacity = bucketCapacity(rate);
  const start = bucket ?? fullBucket(rate, now);
  const at = Math.max(start.updatedAt, now);
  const elapsed = at - start.updatedAt;
  const level = Math.min(capacity, Math.max(0, start.level) + Math.min(elapsed, UNITS_PER_TOKEN) * rate);
  if (level >= UNITS_PER_TOKEN) {
    return { admitted: true, bucket: { level: level - UNITS_PER_TOKEN, updatedAt: at }, retryAfterS: 0 };
  }
  const waitMs = Math.ceil((UNITS_PER_TOKEN - level) / rate) + Math.max(0, at - now);
  return { admitted: false, bucket: { level, updatedAt: at }, retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)) };
}

/**
 * The most a bucket of `rate` may admit in any window of `windowMs` milliseconds: a full bucket,
 * plus what refills during the window. (Used by tests; also the documented guarantee.)
 */
export function admissionBound(rate: number, windowMs: number): number {
  return rate + Math.floor((windowMs * rate) / UNITS_PER_TOKEN);
}
