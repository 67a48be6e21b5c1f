/** Bytes received for an upload, held apart until they are committed under their hash. */
export interface StagedBlob {
  readonly size: number;
  /** Hex SHA-256 of what was received. */
  readonly sha256: string;
}

/**
 * What core allows a direct upload to send (upload/direct.ts decides it): exactly `size` bytes,
 * hashing to `sha256` when the session announced one, within `ttlS` seconds.
 */
export interface DirectPutGrant {
  readonly size: number;
  readonly sha256: string | null;
  readonly ttlS: number;
}

/** How a client sends a direct upload: `PUT url` with exactly these headers (they are signed). */
export interface DirectPut {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * What core allows one part of a multipart direct upload to send (upload/multipart.ts decides it):
 * part `partNumber`, exactly `size` bytes hashing to `sha256`, within `ttlS` seconds.
 */
export interface PartGrant {
  readonly partNumber: number;
  readonly size: number;
  /** Hex SHA-256 of the part, as the client announced it: the store's checksum then refuses any other body. */
  readonly sha256: string;
  readonly ttlS: number;
}

/** One part a multipart upload holds now, as the store lists it. */
export interface StoredPart {
  readonly partNumber: number;
  readonly size: number;
  /** The store's tag for the part, which completing names. */
  readonly etag: string;
  /** The part's SHA-256 as the store checked it (base64, as S3 answers), when the store keeps one. */
  readonly checksum: string | null;
}

/**
 * Multipart staging, only on stores a client can reach directly (object storage): a large upload's
 * bytes arrive as parts through presigned URLs into one multipart upload per staging id, which
 * becomes the staged object (as a direct PUT would have left it) only when completed. Until then
 * nothing is under the staging key, and nothing a part URL sends can reach a content address.
 *
 * What an object store must do: `presignParts` opens the staging id's multipart upload if none is
 * open (two racing openings settle on one: every call names the same upload, the oldest), and
 * signs each part's PUT with its Content-Length and SHA-256 checksum, so the store refuses another
 * length or body; a URL reaches only that part of that upload. `parts` lists what the open upload
 * holds (every page); `complete` assembles exactly the parts named, in order, under the staging
 * key; `abort` ends every open upload of the id, dropping its parts (idempotent); `listOpen`
 * names the staging ids that have one open now.
 */
export interface MultipartStaging {
  /** One signed PUT per grant, in the grants' order, for the staging id's open multipart upload (opened if none is). */
  presignParts(stagingId: string, grants: readonly PartGrant[]): Promise<DirectPut[]>;
  /** The parts the open multipart upload of `stagingId` holds, by part number; null when none is open. */
  parts(stagingId: string): Promise<readonly StoredPart[] | null>;
  /**
   * Assembles `parts` (in ascending part number) into the object at the staging key and ends the
   * upload: 'nothing' when no multipart upload is open for the id (already completed or aborted).
   */
  complete(stagingId: string, parts: readonly StoredPart[]): Promise<'completed' | 'nothing'>;
  /** Ends every open multipart upload of `stagingId` and drops its parts; none open is nothing to do. */
  abort(stagingId: string): Promise<void>;
  /** The staging ids with a multipart upload open now, in no particular order. */
  listOpen(): AsyncIterable<string>;
}

/** What a direct upload left under a staging id, as `arrived` finds it. */
export type Arrived = StagedBlob | 'too_large' | 'nothing';

/** One stored blob as `list` names it. */
export interface ListedBlob {
  readonly contentHash: string;
  readonly size: number;
}

/**
 * A blob the sweep moved aside from its content address (`quarantine`): `id` names this one copy
 * (the store makes it unique per quarantine), `contentHash` is where it goes back to.
 */
export interface QuarantinedBlob {
  readonly contentHash: string;
  readonly id: string;
}

/** What a store knows of a stored blob without reading it. */
export interface BlobStat {
  readonly size: number;
}

/**
 * A byte range of a blob, both ends INCLUSIVE (as HTTP's `Range: bytes=start-end` and S3's
 * `GetObject` Range), with `0 <= start <= end < size`: the caller resolves suffix and open ranges
 * against `stat` first, so a store never sees an unsatisfiable or empty range.
 */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

/**
 * Content-addressed ciphertext storage. Bytes are staged per upload and become a blob only when
 * their SHA-256 matches the claimed hash, so a crash or a wrong hash leaves nothing half-stored.
 *
 * Staged bytes outlive their commit: a writer keeps them until its ledger row is written and the
 * blob is checked at its address, and only then discards them; the sweep never deletes a blob
 * directly but moves it into quarantine, reads the ledger again, and puts it back or drops it.
 * Each side checks after acting, so one of the two always sees the other (blobs/handoff.ts).
 *
 * What an object store (S3 and its kin) must do to implement this port:
 * - `stage` writes under a key of the server's own (never under the content address, and never a
 *   key any signed URL names), fresh for each stage, and keeps nothing when the body fails or passes
 *   `maxBytes` (abort the multipart upload / delete the object); with those bytes it keeps what
 *   it hashed as they streamed in (a seal: the key, size, SHA-256, and the ETag they were written
 *   under). `arrived` takes what a client wrote under its staging key into such a key too (a copy
 *   inside the store, pinned to the ETag it saw) and hashes that copy once, streamed (or takes
 *   the store's full-object checksum when the staged object and its copy both report it), and
 *   seals it. `commit` copies sealed bytes to the content address without reading them again,
 *   pinned to the sealed ETag; a key whose ETag or size is no longer the sealed one is hashed
 *   again where it is, and without a seal the client's staged object is taken in and hashed first.
 *   An address that already holds bytes hashing to the claim is never written over (read back and
 *   hashed; the copy also carries If-None-Match where the store honours it). Staged bytes stay
 *   until `discard`: a reader never sees a partial or wrong object under a hash, even when a
 *   client replaces its staged object mid-commit or the store ignores copy preconditions, since
 *   only the bucket's own credentials write a key of the server's own. `digest` reads the address
 *   back by streaming it.
 * - `has`, `stat` and `read` answer for the content address only (HeadObject / GetObject);
 *   "no such key" is false / null, never an error, and never an empty body. Any other failure
 *   (unreachable, denied, slow past its bound) throws, so callers fail closed.
 * - `read` streams (GetObject's body, the range passed as `Range: bytes=start-end`): a blob of
 *   gigabytes never sits in memory. The iterable is consumed at most once; the caller either reads
 *   it to the end or stops early (`break` / `return()`), and either releases the object's
 *   connection or file.
 * - `remove` and `discard` are idempotent (deleting a missing key succeeds); so are
 *   `unquarantine` and `dropQuarantined`, which may also run at once on the same copy (a reader
 *   putting it back while a sweep settles it): the copy ends up put back whole or dropped, never
 *   half, and the one that comes second finds nothing to do. Quarantined copies live under a
 *   prefix of their own (`quarantine/<sha256>.<suffix>`), which `list` and `listStaged` never
 *   read; `quarantine` is a copy to such a key, then a delete of the address. `quarantinedCopies`
 *   reads only the keys under `quarantine/<sha256>.` (one ListObjectsV2 by that prefix), never the
 *   whole quarantine: a read that misses asks it. The store must read its own writes and deletes
 *   at once (S3 does): the hand-over relies on a check seeing a quarantine that finished.
 * - `presignGet`, when present, answers a URL that serves exactly `read(hash)`'s bytes (ranges
 *   included) to anyone holding it, for at most `ttlS` seconds, with the `Cache-Control` and
 *   `Content-Type` of `answer`; it must not list or reach any other key. The server only calls it
 *   after core decided the caller may read that blob.
 */
/** The headers a presigned download answers with, as the server's own answer would carry them. */
export interface PresignedAnswer {
  readonly cacheControl: string;
  readonly contentType: string;
}

export interface BlobStore {
  /**
   * Streams bytes into the upload's staging area, replacing earlier staged bytes. More than
   * `maxBytes` is refused (null) and nothing is kept.
   */
  stage(stagingId: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StagedBlob | null>;
  /**
   * Copies staged bytes to their content address if their SHA-256 is `contentHash`. What reaches
   * the address is only ever bytes whose hash this store saw where no client can write: hashed by
   * `stage` as they streamed in, or by `arrived` (or this commit) in a copy of a client's object,
   * and kept with those very bytes (a seal naming the file or key, which was written once and not
   * since; a seal of anything else, torn or missing, and the bytes are hashed again). An address
   * that already holds bytes hashing to `contentHash` is left as it is, never overwritten. So after
   * 'stored' the address holds bytes of that hash, and finalize only looks at its size (`stat`)
   * before charging, never reading it back whole. The staged bytes STAY until `discard`: the writer
   * may need to commit them again after its ledger write (blobs/handoff.ts). 'missing': nothing is
   * staged under that id.
   */
  commit(stagingId: string, contentHash: string): Promise<'stored' | 'hash_mismatch' | 'missing'>;
  /** Drops staged bytes (committed or not). */
  discard(stagingId: string): Promise<void>;
  /**
   * The bytes staged under `stagingId`, streamed (never whole in memory); null when nothing is
   * staged there. How the runs of a resumable upload become its staged bytes (upload/resumable.ts).
   */
  readStaged(stagingId: string): Promise<AsyncIterable<Uint8Array> | null>;
  /**
   * What is at the content address now, read back from there: its size and the SHA-256 of its
   * bytes, streamed (never a checksum the store merely keeps, which a store that ignores checksums
   * could hold wrong); null when nothing is there. How a commit checks an address that already
   * holds bytes before it leaves them there.
   */
  digest(contentHash: string): Promise<StagedBlob | null>;
  has(contentHash: string): Promise<boolean>;
  /** The stored blob's size; null when no blob is stored under that hash. */
  stat(contentHash: string): Promise<BlobStat | null>;
  /**
   * The blob's bytes (or the inclusive `range` of them) as a stream; null when no blob is stored
   * under that hash. Resolves once the object is open, before any byte is read.
   */
  read(contentHash: string, range?: ByteRange): Promise<AsyncIterable<Uint8Array> | null>;
  /**
   * Deletes the blob at once. Core never calls it (the sweep quarantines, see above): it is for
   * tools and tests that delete behind the server's back.
   */
  remove(contentHash: string): Promise<void>;
  /**
   * Moves the blob at `contentHash` aside, to a key of its own that is neither a content address
   * nor a staging id (a rename, or a copy then a delete of the address), and answers that copy;
   * null when nothing is at the address. From then on `has`/`read` answer absent for the hash
   * until something commits or unquarantines it.
   */
  quarantine(contentHash: string): Promise<QuarantinedBlob | null>;
  /**
   * Puts a quarantined copy back at its content address and drops the copy. An address that holds
   * the bytes again (committed meanwhile) may keep them or take the copy: they are the same bytes.
   * A copy already gone is nothing to do.
   */
  unquarantine(blob: QuarantinedBlob): Promise<void>;
  /** Deletes a quarantined copy; one already gone is nothing to do. */
  dropQuarantined(blob: QuarantinedBlob): Promise<void>;
  /**
   * Every quarantined copy now, in no particular order: what a sweep that stopped midway left,
   * settled by the next one. Never in `list` or `listStaged`.
   */
  listQuarantined(): AsyncIterable<QuarantinedBlob>;
  /**
   * The quarantined copies of one hash now (usually none, at most a few): what a read that finds
   * its blob absent asks (blobs/handoff.ts). A remote store finds them by their key prefix rather
   * than by listing the whole quarantine; a local directory read of it is cheap enough.
   */
  quarantinedCopies(contentHash: string): Promise<readonly QuarantinedBlob[]>;
  /**
   * The whole blob as a stream, or null when it is absent (`read` without a range): a backup
   * copies blobs of any size without holding one whole in memory.
   */
  stream(contentHash: string): Promise<AsyncIterable<Uint8Array> | null>;
  /**
   * How a backup takes this store's blobs: `copy` their bytes into the backup (a local disk, which
   * fails with the machine), or `manifest`: list the objects the ledger references, with their
   * hashes, because the store keeps them durably itself (object storage with its own replication
   * and versioning); restoring then needs that store, not bytes from the backup.
   */
  readonly backupMode: 'copy' | 'manifest';
  /**
   * Every blob stored under a content address (never staging or quarantine), in ascending hash
   * order, with its size: how `blobs verify` compares the store with the ledger without holding
   * either whole. Anything under the blobs area that is not a content address is left out.
   */
  list(): AsyncIterable<ListedBlob>;
  /**
   * The ids that hold staged bytes now (upload ids, and the short-lived ids of whole-blob writes in
   * flight), in no particular order: how the sweep finds staged bytes no open session holds any
   * more. Never content addresses.
   */
  listStaged(): AsyncIterable<string>;
  /**
   * Only for stores a client can reach directly (object storage): a URL, valid at most `ttlS`
   * seconds, that serves the blob's bytes as `read` would. Absent on stores that cannot (the
   * filesystem); the server then carries the bytes itself.
   */
  presignGet?(contentHash: string, ttlS: number, answer: PresignedAnswer): Promise<string>;
  /**
   * Only for stores a client can reach directly (and always with `arrived`): a URL through which a
   * client PUTs an upload's bytes straight to the staging area of `stagingId`, as `stage` would
   * have put them, valid at most `grant.ttlS` seconds. The signature must pin the Content-Length to
   * `grant.size` and, when `grant.sha256` is set, the store's SHA-256 checksum to it (a store that
   * verifies checksums then refuses any other body). It must not reach any other key.
   */
  presignPut?(stagingId: string, grant: DirectPutGrant): Promise<DirectPut>;
  /**
   * What a direct PUT left under `stagingId`: its size and SHA-256, taken from a copy in a key of
   * the server's own (the store's full-object checksum when the object and its copy report one,
   * else a streamed hash of the copy), which `commit` then copies without reading it again;
   * `nothing` when no object is there, `too_large` (and the object deleted) past `maxBytes`. Reads
   * nothing into memory whole.
   */
  arrived?(stagingId: string, maxBytes: number): Promise<Arrived>;
  /**
   * Only with `presignPut` and `arrived`: large direct uploads in parts (see MultipartStaging). What
   * a completed multipart upload leaves under the staging key is what `arrived` then checks.
   */
  readonly multipart?: MultipartStaging;
}
