import type { BucketDecision } from '../peer-rate-limit/bucket.js';

/**
 * The per-peer token buckets, held in the database so every process of a deployment draws from the
 * same one. The store reads the peer's bucket, applies core's `takeToken` and writes the result in
 * one transaction (no lost updates across connections or processes).
 */
export interface PeerRateStore {
  takePeerToken(peer: string, now: number, rate: number): Promise<BucketDecision>;
}
