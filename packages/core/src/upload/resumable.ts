import { mayReach, type Accessor } from '../access/rules.js';
import { toHex } from '../encoding/bytes.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { Arrived, BlobStore } from '../ports/blob-store.js';
import type { Clock } from '../ports/clock.js';
import type { Random } from '../ports/random.js';
import type { Appended, AppendRefusal, UploadSegment, UploadSegments } from '../ports/upload-segments.js';
import type { UploadSessionRecord, UploadSessions } from '../ports/upload-sessions.js';
import type { WriteGuard } from '../ports/write-guard.js';
import { isUuid } from '../encoding/uuid.js';
import { decideArrival } from './direct.js';
import { isFinalized, uploadState } from './machine.js';

/**
 * Resumable uploads (the tus 1.0 protocol's core, creation, termination and checksum extensions)
 * on upload sessions. Creation and termination ARE `UploadService.create` and `cancel`; what this
 * file adds is the offset: each PATCH stages its bytes as a run of their own (a segment, never
 * written into by anyone else), and only then records the run in the database, in a transaction
 * that accepts it only at the offset the session has reached (`decideAppend`). So the offset a
 * client is told is durable, two PATCHes racing at one offset cannot both land (the second finds
 * the offset moved: 409), and a PATCH that dies midway leaves a run no row names, which the
 * staging sweep removes. When the runs reach the declared size they are streamed, in order, into
 * the session's staged bytes (hashed as they go): from there finalize is the usual one.
 */

/** The runs' contiguous end: the session's offset. Runs are recorded only at the offset reached, so they chain from 0. */
export function uploadOffset(segments: readonly Pick<UploadSegment, 'start' | 'length'>[]): number {
  let offset = 0;
  for (const s of [...segments].sort((a, b) => a.start - b.start)) {
    if (s.start !== offset) break;
    offset += s.length;
  }
  return offset;
}

/** A session takes runs while it waits for bytes: Pending (none yet) or Uploading (some), unexpired. */
export function takesSegments(session: Pick<UploadSessionRecord, 'state' | 'expiresAt'>, now: number): boolean {
  const state = uploadState(session, now);
  return state === 'Pending' || state === 'Uploading';
}

/**
 * The most runs one session may hold. Each is a staged object and a row, read again when the
 * session's bytes are assembled: without a bound a client could leave a million one-byte runs
 * behind one small reservation. 10,000 runs of tus clients' usual chunks (a few MiB, or the whole
 * rest of the file) are tens of gigabytes.
 */
export const MAX_RUNS = 10_000;

/**
 * May this run be recorded? Only on a session that takes runs, only at exactly the offset the
 * session has reached (what a racing PATCH that landed first moved is `offset_moved`), only
 * within the declared size, and only while the session holds fewer than MAX_RUNS runs. What the
 * store writes: the run, and the session Uploading.
 */
export function decideAppend(
  facts: { readonly session: UploadSessionRecord | null; readonly segments: readonly UploadSegment[] },
  segment: Pick<UploadSegment, 'start' | 'length'>,
  now: number,
): Appended | AppendRefusal {
  const s = facts.session;
  if (s === null || !takesSegments(s, now)) return 'not_open';
  if (segment.start !== uploadOffset(facts.segments)) return 'offset_moved';
  if (!Number.isSafeInteger(segment.length) || segment.length < 1 || segment.start + segment.length > s.declaredSize)
    return 'too_large';
  if (facts.segments.length >= MAX_RUNS) return 'too_many';
  return { offset: segment.start + segment.length };
}

/**
 * The staging id of one run: the session's id, where it starts, and a random part (two PATCHes at
 * one offset stage apart). Only letters, digits, `_` and `-`, as every blob store takes.
 */
export function segmentStagingId(uploadId: string, start: number, nonce: Uint8Array): string {
  return `${uploadId}_${start}_${toHex(nonce)}`;
}

/** The session a run's staging id belongs to, or null when the id is not a run's. */
export function segmentOwner(stagingId: string): string | null {
  const m = /^([0-9a-f-]{36})_\d+_[0-9a-f]+$/.exec(stagingId);
  return m !== null && isUuid(m[1]!) ? m[1]! : null;
}

/**
 * What a tus HEAD answers for a session: the bytes received so far. A session whose bytes were all
 * received (WaitingForProcessing) or that finalized answers its received size; cancelled or
 * expired, there is nothing to resume (404, as tus asks for an upload that is gone).
 */
export function resumableOffset(
  session: UploadSessionRecord,
  segments: readonly UploadSegment[],
  now: number,
): number | null {
  const state = uploadState(session, now);
  if (state === 'WaitingForProcessing' || isFinalized(session)) return session.receivedSize;
  if (state === 'Pending' || state === 'Uploading') return uploadOffset(segments);
  return null;
}

export interface ResumableDeps {
  readonly sessions: UploadSessions;
  readonly segments: UploadSegments;
  readonly blobs: BlobStore;
  readonly writeGuard: WriteGuard;
  readonly clock: Clock;
  readonly random: Random;
}

export interface AppendBytes {
  /** The Upload-Offset the client sent the bytes at. */
  readonly offset: number;
  readonly body: AsyncIterable<Uint8Array>;
  /** Hex SHA-256 the client announced for these bytes (tus Upload-Checksum), or null. */
  readonly sha256: string | null;
  /** The request's X-Svc-Protocol version: bytes of a session opened in an album are a write to it. */
  readonly protocolVersion: string;
}

/** Where a resumable session stands: what it has received of what it declared, and until when it takes more. */
export interface ResumableView {
  readonly offset: number;
  readonly length: number;
  readonly expiresAt: number;
}

type AppendError =
  | 'error.not_found'
  | 'error.conflict'
  | 'error.upload.too_large'
  | 'error.upload.checksum_mismatch'
  | 'error.protocol.below_album_pin'
  | 'error.request.too_many';
const STORE = 'error.store.unavailable' as const;

/** An upload session as the access rule sees it (as upload/service.ts has it). */
const uploadObject = (s: UploadSessionRecord) => ({ kind: 'upload' as const, id: s.id, accountId: s.uploaderId });

/** The offset side of resumable uploads: HEAD and PATCH. Whoever may PUT /upload/{id} may use them (a drop's guest too). */
export class ResumableUploads {
  readonly #d: ResumableDeps;
  constructor(deps: ResumableDeps) {
    this.#d = deps;
  }

  async #reach(caller: Accessor, id: string): Promise<UploadSessionRecord | null> {
    const s = await guard(STORE, 'upload session read', () => this.#d.sessions.findUpload(id));
    return s && mayReach(caller, uploadObject(s), 'send') ? s : null;
  }

  async #segments(id: string): Promise<readonly UploadSegment[]> {
    return guard(STORE, 'upload segment read', () => this.#d.segments.listSegments(id));
  }

  /** The session's offset as the database holds it (tus HEAD). */
  async offset(caller: Accessor, id: string): Promise<Result<ResumableView, 'error.not_found'>> {
    const s = await this.#reach(caller, id);
    if (!s) return refuse('error.not_found', 'No such upload session.');
    const now = this.#d.clock.now();
    const offset = resumableOffset(s, await this.#segments(id), now);
    if (offset === null) return refuse('error.not_found', 'The upload session is over: nothing to resume.');
    // Every byte recorded, yet not assembled: the PATCH that recorded the last run stopped before
    // that step. A tus client HEADs after any failure and sees nothing left to send, so HEAD
    // finishes the step (it only ever stages bytes already acknowledged); a refusal there is
    // finalize's to report.
    if (offset === s.declaredSize && takesSegments(s, now)) await this.#assemble(s);
    return ok({ offset, length: s.declaredSize, expiresAt: s.expiresAt });
  }

  /**
   * Appends bytes at `input.offset` (tus PATCH): staged as a run of their own (fsynced), checked
   * against the announced checksum, then recorded at that offset in one transaction. Answers the
   * new offset only once the record is durable. Any refusal keeps nothing of this request and
   * leaves the session's offset where it was. At the declared size the runs become the session's
   * staged bytes (WaitingForProcessing): finalize as with PUT. A PATCH at the full offset with no
   * bytes does that step again, should a process have stopped between the record and the step.
   */
  async append(caller: Accessor, id: string, input: AppendBytes): Promise<Result<ResumableView, AppendError>> {
    const s = await this.#reach(caller, id);
    if (!s) return refuse('error.not_found', 'No such upload session.');
    if (s.albumId !== null) {
      const pinned = await this.#d.writeGuard.checkInFlightWrite({
        albumId: s.albumId,
        protocolVersion: input.protocolVersion,
      });
      if (!pinned.ok) return pinned;
    }
    const now = this.#d.clock.now();
    if (!takesSegments(s, now)) {
      const state = uploadState(s, now);
      // Every byte is in (an earlier PATCH, perhaps unanswered, reached the length): the answer
      // names the full offset, as HEAD does, so a client resuming learns it is done.
      const full = state === 'WaitingForProcessing' ? { upload_offset: s.declaredSize } : {};
      return refuse('error.conflict', `The upload session is ${state}: it takes no more bytes.`, { state, ...full });
    }
    const reached = uploadOffset(await this.#segments(id));
    if (input.offset !== reached) return moved(reached);
    const view = (offset: number): ResumableView => ({ offset, length: s.declaredSize, expiresAt: s.expiresAt });
    const segmentId = segmentStagingId(id, input.offset, this.#d.random.bytes(8));
    let staged;
    try {
      staged = await this.#d.blobs.stage(segmentId, input.body, s.declaredSize - input.offset);
    } catch (cause) {
      await this.#d.blobs.discard(segmentId);
      throw cause;
    }
    if (staged === null) {
      return refuse(
        'error.upload.too_large',
        `The upload declared ${s.declaredSize} bytes and ${input.offset} are received; more were sent and nothing was kept.`,
        {
          declared_size: s.declaredSize,
          upload_offset: input.offset,
        },
      );
    }
    if (staged.size === 0) {
      await this.#d.blobs.discard(segmentId);
      if (reached === s.declaredSize) {
        const assembled = await this.#assemble(s);
        if (!assembled.ok) return assembled;
      }
      return ok(view(reached));
    }
    if (input.sha256 !== null && input.sha256 !== staged.sha256) {
      await this.#d.blobs.discard(segmentId);
      return refuse('error.upload.checksum_mismatch', 'The bytes do not match Upload-Checksum; nothing was kept.', {
        upload_offset: input.offset,
      });
    }
    const appended = await guard(STORE, 'upload segment write', () =>
      this.#d.segments.appendSegment(
        { uploadId: id, start: input.offset, length: staged.size, segmentId },
        this.#d.clock.now(),
      ),
    );
    if (typeof appended === 'string') {
      await this.#d.blobs.discard(segmentId);
      if (appended === 'offset_moved') return moved(uploadOffset(await this.#segments(id)));
      if (appended === 'too_large')
        return refuse('error.upload.too_large', 'More bytes were sent than the upload declared; nothing was kept.', {
          declared_size: s.declaredSize,
        });
      if (appended === 'too_many') {
        return refuse(
          'error.request.too_many',
          `An upload takes at most ${MAX_RUNS} PATCHes; send larger chunks, or the rest in one.`,
          { max_runs: MAX_RUNS, upload_offset: input.offset },
        );
      }
      return refuse('error.conflict', 'The upload session closed while the bytes were arriving; nothing was kept.');
    }
    if (appended.offset === s.declaredSize) {
      const assembled = await this.#assemble({ ...s, state: 'Uploading' });
      if (!assembled.ok) return assembled;
    }
    return ok(view(appended.offset));
  }

  /**
   * Streams the runs, in order, into the session's staged bytes and records their size and hash
   * (upload/direct.ts decideArrival: bytes that cannot hash to the announced content_hash are
   * refused and nothing is staged). The runs' own staged copies then go.
   */
  async #assemble(s: UploadSessionRecord): Promise<Result<void, 'error.conflict' | 'error.upload.too_large'>> {
    const segments = [...(await this.#segments(s.id))].sort((a, b) => a.start - b.start);
    const blobs = this.#d.blobs;
    const runs = async function* (): AsyncIterable<Uint8Array> {
      for (const seg of segments) {
        const bytes = await blobs.readStaged(seg.segmentId);
        if (bytes === null) throw new RunGone();
        yield* bytes;
      }
    };
    let staged: Arrived;
    try {
      staged = (await blobs.stage(s.id, runs(), s.declaredSize)) ?? 'too_large';
    } catch (e) {
      // Only the sweep removes a recorded run, and only once its session ended (cancelled, expired).
      if (e instanceof RunGone)
        return refuse('error.conflict', 'The upload session closed while the bytes were arriving.');
      throw e;
    }
    const accepted = decideArrival(s, staged);
    const now = this.#d.clock.now();
    if (!accepted.ok) {
      await blobs.discard(s.id);
      return accepted;
    }
    const marked = await guard(STORE, 'upload session write', () =>
      this.#d.sessions.markReceived(s.id, { size: accepted.value.size, hash: accepted.value.sha256 }, now),
    );
    if (!marked) {
      await blobs.discard(s.id);
      return refuse('error.conflict', 'The upload session closed while the bytes were arriving.');
    }
    // The runs' own copies are nobody's now. One the store fails to drop does not undo what is
    // recorded: the staging sweep drops it (a run of a session that takes no more runs).
    for (const seg of segments) await blobs.discard(seg.segmentId).catch(() => undefined);
    return ok(undefined);
  }
}

/** A recorded run no longer staged: the session ended and the sweep took it. */
class RunGone extends Error {}

function moved(offset: number): Result<never, 'error.conflict'> {
  return refuse(
    'error.conflict',
    `Upload-Offset does not match: the server holds ${offset} bytes of this upload; send from there.`,
    { upload_offset: offset },
  );
}
