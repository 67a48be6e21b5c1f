import type { BucketDecision } from '../peer-rate-limit/bucket.js';

/**
 * Keyed token buckets, held in the database so every process of a deployment draws from the same
 * one: one per federation peer (keyed by its base URL) and one per account for its handle lookups
 * (core's `lookupBucketKey`). Core chooses the keys; the store keeps whatever it is given. The store reads the peer's bucket, applies core's `takeToken` and writes the result in
 * one transaction (no lost updates across connections or processes).
 */
export interface PeerRateStore {
  takePeerToken(peer: string, now: number, rate: number): Promise<BucketDecision>;
}
