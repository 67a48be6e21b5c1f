import { ok, refuse, type Result } from '../errors.js';
import type { Arrived, DirectPutGrant, StagedBlob } from '../ports/blob-store.js';
import type { UploadSessionRecord } from '../ports/upload-sessions.js';
import { uploadState } from './machine.js';

/**
 * Direct transfers: a client sends an upload's bytes straight to object storage with a presigned
 * URL, and fetches a blob from it with another (blobs/rules.ts MAX_PRESIGN_TTL_S). The store signs;
 * the limits are decided here, once, for every store and every route.
 */

/**
 * The longest a direct upload URL lives, however long its session does. A PUT that starts before
 * the URL expires may finish after (object stores check the signature when a request begins), so
 * this bounds how long a leaked URL is good for, not how long an upload may take; a day keeps a
 * large upload on a slow link viable (Ente's museum uses seven days; its reviewers cut PUTs to one).
 */
export const MAX_DIRECT_PUT_TTL_S = 86_400;

/**
 * What a direct upload URL for `session` may allow as of `now`: exactly the declared size (the
 * signature pins Content-Length, so the client declares the exact size it sends), the announced
 * hash when there is one (the store's checksum then refuses any other body), and at most the
 * session's remaining lifetime. Null when the session is no longer open, or has under a second left.
 */
export function directPutGrant(session: Pick<UploadSessionRecord, 'state' | 'expiresAt' | 'declaredSize' | 'contentHash'>, now: number): DirectPutGrant | null {
  if (uploadState(session, now) !== 'Pending') return null;
  const ttlS = Math.min(Math.floor((session.expiresAt - now) / 1000), MAX_DIRECT_PUT_TTL_S);
  if (ttlS < 1) return null;
  return { size: session.declaredSize, sha256: session.contentHash, ttlS };
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
    return refuse('error.upload.too_large', `The upload declared ${session.declaredSize} bytes; more were sent and nothing was kept.`, { declared_size: session.declaredSize });
  }
  if (session.contentHash !== null && arrived.sha256 !== session.contentHash) return refuse('error.conflict', 'The bytes do not hash to the content_hash announced at creation.');
  if (claimed !== null && arrived.sha256 !== claimed) return refuse('error.conflict', 'The bytes that arrived do not hash to content_hash; nothing was kept.');
  return ok(arrived);
}
