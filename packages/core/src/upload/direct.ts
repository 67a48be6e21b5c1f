import { ok, refuse, type Result } from '../errors.js';
import type { Arrived, BlobStat, DirectPutGrant, StagedBlob } from '../ports/blob-store.js';
import type { UploadSessionRecord } from '../ports/upload-sessions.js';
import { uploadState } from './machine.js';

/**
 * Direct transfers: a client sends an upload's bytes straight to object storage with a presigned
 * URL, and fetches a blob from it with another (blobs/rules.ts MAX_PRESIGN_TTL_S). The store signs;
 * the limits are decided here, once, for every store and every route.
 */

/**
 * How long a direct upload URL lives by default (SVC_S3_PUT_URL_S), however long its session does.
 * Object stores check the signature when a request begins, so a PUT that starts in time may finish
 * later: this bounds how long a leaked URL is good for, not how long an upload may take. A client
 * whose URL lapsed asks for a fresh one (POST /upload/{id}/direct-put) while its session is open.
 */
export const DEFAULT_DIRECT_PUT_TTL_S = 900;

/**
 * What a direct upload URL for `session` may allow as of `now`: exactly the declared size (the
 * signature pins Content-Length, so the client declares the exact size it sends), the announced
 * hash when there is one (the store's checksum then refuses any other body), for at most
 * `maxTtlS` seconds and never past the session's expiry. Null when the session is not waiting for
 * bytes (Pending), or has under a second left.
 */
export function directPutGrant(
  session: Pick<UploadSessionRecord, 'state' | 'expiresAt' | 'declaredSize' | 'contentHash'>,
  now: number,
  maxTtlS: number = DEFAULT_DIRECT_PUT_TTL_S,
): DirectPutGrant | null {
  if (uploadState(session, now) !== 'Pending') return null;
  const ttlS = Math.min(Math.floor((session.expiresAt - now) / 1000), maxTtlS);
  if (ttlS < 1) return null;
  return { size: session.declaredSize, sha256: session.contentHash, ttlS };
}

/**
 * What a store holds at `contentHash` after a commit, as its `stat` finds the address: `held`, a
 * blob of exactly the size received; `other`, a blob of another size, which is never charged;
 * `taken`, nothing: a sweep moved the blob aside between the commit and the look, and the
 * hand-over after the ledger write (blobs/handoff.ts) commits it again, which only ever writes
 * bytes it hashed. The hash needs no second reading: a commit only ever puts bytes at an address
 * that it (or the commit before it) saw hash to it (ports/blob-store.ts), so reading a blob of
 * gigabytes back to hash it again would only repeat what the commit checked.
 */
export function decideStored(found: BlobStat | null, size: number): 'held' | 'taken' | 'other' {
  if (found === null) return 'taken';
  return found.size === size ? 'held' : 'other';
}

/**
 * What arrived for an upload (by the proxied PUT, or directly in the store), checked before the
 * session records it and before anything is committed or charged: nothing is a conflict (no bytes
 * yet), more than the declared size is too large, and bytes that do not hash to the content hash
 * announced at creation (or, at finalize, to the hash finalized with) can never finalize. The caller
 * keeps nothing on any refusal.
 */
export function decideArrival(
  session: Pick<UploadSessionRecord, 'declaredSize' | 'contentHash'>,
  arrived: Arrived,
  /** At finalize: the content hash the client finalizes with, which the bytes must also hash to. */
  claimed: string | null = null,
): Result<StagedBlob, 'error.conflict' | 'error.upload.too_large'> {
  if (arrived === 'nothing') return refuse('error.conflict', 'No bytes have been received for this upload yet.');
  if (arrived === 'too_large' || arrived.size > session.declaredSize) {
    return refuse(
      'error.upload.too_large',
      `The upload declared ${session.declaredSize} bytes; more were sent and nothing was kept.`,
      { declared_size: session.declaredSize },
    );
  }
  if (session.contentHash !== null && arrived.sha256 !== session.contentHash)
    return refuse('error.conflict', 'The bytes do not hash to the content_hash announced at creation.');
  if (claimed !== null && arrived.sha256 !== claimed)
    return refuse('error.conflict', 'The bytes that arrived do not hash to content_hash; nothing was kept.');
  return ok(arrived);
}
