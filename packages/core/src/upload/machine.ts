import { ok, refuse, type Result } from '../errors.js';
import { holds, type RowFilter } from '../filters/filter.js';
import type { UploadSessionRecord, UploadState } from '../ports/upload-sessions.js';

export const OPEN_STATES: readonly UploadState[] = ['Pending', 'Uploading', 'WaitingForProcessing'];
export const TERMINAL_STATES: readonly UploadState[] = ['Completed', 'Merged', 'Cancelled', 'Expired'];
export const UPLOAD_STATES: readonly UploadState[] = [...OPEN_STATES, ...TERMINAL_STATES];

/** Pending counts as in flight; so do Uploading and WaitingForProcessing. */
export function isOpenState(state: UploadState): boolean {
  return OPEN_STATES.includes(state);
}

/**
 * In flight at `now` (parameter `now`): an open state, and the expiry still ahead. Every count of
 * open uploads, every write that needs the session open, and the census apply this one filter.
 */
export const UPLOAD_IN_FLIGHT: RowFilter<'state' | 'expiresAt'> = [
  { op: 'in', field: 'state', values: OPEN_STATES },
  { op: '>', field: 'expiresAt', param: 'now' },
];

/** Lapsed at `now` (parameter `now`): still marked open, its expiry reached. The sweep writes these Expired. */
export const UPLOAD_LAPSED: RowFilter<'state' | 'expiresAt'> = [
  { op: 'in', field: 'state', values: OPEN_STATES },
  { op: '<=', field: 'expiresAt', param: 'now' },
];

/** The state as of `now`: an open session past its expiry is Expired, whether or not a sweep wrote it. */
export function uploadState(session: Pick<UploadSessionRecord, 'state' | 'expiresAt'>, now: number): UploadState {
  return holds(UPLOAD_LAPSED, session, { now }) ? 'Expired' : session.state;
}

export function isInFlight(session: Pick<UploadSessionRecord, 'state' | 'expiresAt'>, now: number): boolean {
  return holds(UPLOAD_IN_FLIGHT, session, { now });
}

/** Finalized: its bytes are in the ledger (charged, or merged into a blob already there). */
export function isFinalized(session: Pick<UploadSessionRecord, 'state'>): boolean {
  return session.state === 'Completed' || session.state === 'Merged';
}

/** Hex SHA-256 of a ciphertext: the content address. */
export const CONTENT_HASH_PATTERN = /^[0-9a-f]{64}$/;
const HEX64 = CONTENT_HASH_PATTERN;
export function isContentHash(text: string): boolean {
  return HEX64.test(text);
}

type Conflict = 'error.conflict';

function notOpen(state: UploadState): Result<never, Conflict> {
  return refuse('error.conflict', `The upload session is ${state}.`, { state });
}

/** May bytes be sent? Only while the session is open. */
export function decidePut(session: UploadSessionRecord, now: number): Result<void, Conflict> {
  const state = uploadState(session, now);
  return isOpenState(state) ? ok(undefined) : notOpen(state);
}

/**
 * May the session be finalized with this hash? An open session needs its bytes received, hashing
 * to `contentHash` (and to the hash announced at creation, if any). Finalize is idempotent: a
 * session already finalized with these very bytes answers as it stands (`done`), whoever won a race.
 */
export function decideFinalize(
  session: UploadSessionRecord,
  contentHash: string,
  now: number,
): Result<{ size: number; done: boolean }, Conflict> {
  const state = uploadState(session, now);
  if (isFinalized(session) && session.receivedHash === contentHash && session.receivedSize !== null) {
    return ok({ size: session.receivedSize, done: true });
  }
  if (!isOpenState(state)) return notOpen(state);
  if (state !== 'WaitingForProcessing' || session.receivedHash === null || session.receivedSize === null) {
    return refuse('error.conflict', 'No bytes have been received for this upload yet.', { state });
  }
  if (session.contentHash !== null && session.contentHash !== contentHash)
    return refuse('error.conflict', 'The content hash differs from the one announced at creation.', { state });
  if (session.receivedHash !== contentHash)
    return refuse('error.conflict', 'The content hash does not match the bytes received.', { state });
  return ok({ size: session.receivedSize, done: false });
}

export function decideCancel(session: UploadSessionRecord, now: number): Result<void, Conflict> {
  const state = uploadState(session, now);
  return isOpenState(state) ? ok(undefined) : notOpen(state);
}
