import { concatBytes, sha256Hex } from '../encoding/bytes.js';
import type {
  Arrived,
  BlobStat,
  BlobStore,
  ByteRange,
  DirectPut,
  DirectPutGrant,
  ListedBlob,
  MultipartStaging,
  PartGrant,
  QuarantinedBlob,
  StagedBlob,
  StoredPart,
} from '../ports/blob-store.js';

/** Chunk size the memory store streams in, small enough that tests see several chunks. */
const CHUNK = 64 * 1024;

/** In-memory content-addressed blob store with the same staging rules as the filesystem one. */
export class MemoryBlobStore implements BlobStore {
  readonly staged = new Map<string, Uint8Array>();
  readonly blobs = new Map<string, Uint8Array>();
  /** Quarantined copies by their id. */
  readonly quarantined = new Map<string, { readonly contentHash: string; readonly bytes: Uint8Array }>();
  #quarantines = 0;

  async stage(stagingId: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StagedBlob | null> {
    this.staged.delete(stagingId);
    const parts: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of body) {
      size += chunk.length;
      if (size > maxBytes) return null;
      parts.push(chunk);
    }
    const all = concatBytes(...parts);
    this.staged.set(stagingId, all);
    return { size, sha256: sha256Hex(all) };
  }
  async commit(stagingId: string, contentHash: string): Promise<'stored' | 'hash_mismatch' | 'missing'> {
    const bytes = this.staged.get(stagingId);
    if (!bytes) return 'missing';
    if (sha256Hex(bytes) !== contentHash) return 'hash_mismatch';
    // The staged bytes stay until discarded (the port's commit copies); verified bytes already
    // at the address are never replaced.
    const there = this.blobs.get(contentHash);
    if (there === undefined || sha256Hex(there) !== contentHash) this.blobs.set(contentHash, bytes);
    return 'stored';
  }
  async discard(stagingId: string): Promise<void> {
    this.staged.delete(stagingId);
  }
  async readStaged(stagingId: string): Promise<AsyncIterable<Uint8Array> | null> {
    const bytes = this.staged.get(stagingId);
    if (bytes === undefined) return null;
    return (async function* () {
      for (let at = 0; at < bytes.length; at += CHUNK) yield bytes.subarray(at, at + CHUNK);
    })();
  }
  async *listStaged(): AsyncIterable<string> {
    yield* [...this.staged.keys()];
  }
  async digest(contentHash: string): Promise<StagedBlob | null> {
    const bytes = this.blobs.get(contentHash);
    return bytes === undefined ? null : { size: bytes.length, sha256: sha256Hex(bytes) };
  }
  async has(contentHash: string): Promise<boolean> {
    return this.blobs.has(contentHash);
  }
  async stat(contentHash: string): Promise<BlobStat | null> {
    const bytes = this.blobs.get(contentHash);
    return bytes === undefined ? null : { size: bytes.length };
  }
  async read(contentHash: string, range?: ByteRange): Promise<AsyncIterable<Uint8Array> | null> {
    const bytes = this.blobs.get(contentHash);
    if (bytes === undefined) return null;
    const start = range?.start ?? 0;
    const end = range === undefined ? bytes.length : range.end + 1;
    if (range !== undefined && !(start >= 0 && start <= range.end && range.end < bytes.length))
      throw new RangeError('range outside the blob');
    return (async function* () {
      for (let at = start; at < end; at += CHUNK) yield bytes.slice(at, Math.min(end, at + CHUNK));
    })();
  }
  async remove(contentHash: string): Promise<void> {
    this.blobs.delete(contentHash);
  }
  async quarantine(contentHash: string): Promise<QuarantinedBlob | null> {
    const bytes = this.blobs.get(contentHash);
    if (bytes === undefined) return null;
    const id = `q${++this.#quarantines}`;
    this.blobs.delete(contentHash);
    this.quarantined.set(id, { contentHash, bytes });
    return { contentHash, id };
  }
  async unquarantine(blob: QuarantinedBlob): Promise<void> {
    const aside = this.quarantined.get(blob.id);
    if (aside === undefined) return;
    this.quarantined.delete(blob.id);
    if (!this.blobs.has(aside.contentHash)) this.blobs.set(aside.contentHash, aside.bytes);
  }
  async dropQuarantined(blob: QuarantinedBlob): Promise<void> {
    this.quarantined.delete(blob.id);
  }
  async *listQuarantined(): AsyncIterable<QuarantinedBlob> {
    yield* [...this.quarantined].map(([id, q]) => ({ contentHash: q.contentHash, id }));
  }
  async quarantinedCopies(contentHash: string): Promise<readonly QuarantinedBlob[]> {
    return [...this.quarantined].filter(([, q]) => q.contentHash === contentHash).map(([id]) => ({ contentHash, id }));
  }
  async stream(contentHash: string): Promise<AsyncIterable<Uint8Array> | null> {
    return this.read(contentHash);
  }
  readonly backupMode = 'copy';
  async *list(): AsyncIterable<ListedBlob> {
    for (const hash of [...this.blobs.keys()].sort()) {
      const bytes = this.blobs.get(hash);
      if (bytes !== undefined) yield { contentHash: hash, size: bytes.length };
    }
  }
}

/**
 * A memory store that a client can "reach directly": presignPut answers a `memory:` URL that names
 * the grant, and `send` plays the client's PUT to it, refusing what a signed URL would refuse (the
 * wrong length, or a checksum header other than the one signed), so tests exercise core's rules
 * for direct uploads without an object store.
 */
export class MemoryDirectBlobStore extends MemoryBlobStore {
  readonly grants = new Map<string, DirectPutGrant>();

  async presignPut(stagingId: string, grant: DirectPutGrant): Promise<DirectPut> {
    this.grants.set(stagingId, grant);
    const headers: Record<string, string> = { 'content-length': String(grant.size) };
    if (grant.sha256 !== null) headers['x-checksum-sha256'] = grant.sha256;
    return { url: `memory:staging/${stagingId}`, headers };
  }

  /** The client's PUT to a presigned URL: true when the store took it. `enforce: false` plays a store that checks nothing. */
  send(stagingId: string, bytes: Uint8Array, enforce = true): boolean {
    const grant = this.grants.get(stagingId);
    if (grant === undefined) return false;
    if (enforce && (bytes.length !== grant.size || (grant.sha256 !== null && sha256Hex(bytes) !== grant.sha256)))
      return false;
    this.staged.set(stagingId, bytes);
    return true;
  }

  async arrived(stagingId: string, maxBytes: number): Promise<Arrived> {
    const bytes = this.staged.get(stagingId);
    if (bytes === undefined) return 'nothing';
    if (bytes.length > maxBytes) {
      this.staged.delete(stagingId);
      return 'too_large';
    }
    return { size: bytes.length, sha256: sha256Hex(bytes) };
  }

  /** Open multipart uploads by staging id: their parts by number. */
  readonly uploads = new Map<string, Map<number, Uint8Array>>();
  /** The last grant signed for each part, by `<staging id>#<part number>`. */
  readonly partGrants = new Map<string, PartGrant>();

  readonly multipart: MultipartStaging = {
    presignParts: async (stagingId, grants) => {
      if (!this.uploads.has(stagingId)) this.uploads.set(stagingId, new Map());
      return grants.map((g) => {
        this.partGrants.set(`${stagingId}#${g.partNumber}`, g);
        return {
          url: `memory:staging/${stagingId}?partNumber=${g.partNumber}`,
          headers: { 'content-length': String(g.size), 'x-checksum-sha256': g.sha256 },
        };
      });
    },
    parts: async (stagingId) => {
      const upload = this.uploads.get(stagingId);
      if (upload === undefined) return null;
      return [...upload].map(
        ([partNumber, bytes]): StoredPart => ({
          partNumber,
          size: bytes.length,
          etag: `"${partNumber}-${bytes.length}"`,
          checksum: null,
        }),
      );
    },
    complete: async (stagingId, parts) => {
      const upload = this.uploads.get(stagingId);
      if (upload === undefined) return 'nothing';
      this.staged.set(stagingId, concatBytes(...parts.map((p) => upload.get(p.partNumber) ?? new Uint8Array())));
      this.uploads.delete(stagingId);
      return 'completed';
    },
    abort: async (stagingId) => {
      this.uploads.delete(stagingId);
    },
    listOpen: () => this.#openIds(),
  };

  async *#openIds(): AsyncIterable<string> {
    yield* [...this.uploads.keys()];
  }

  /** The client's PUT of a part to its presigned URL: true when the store took it (its signed length and checksum). */
  sendPart(stagingId: string, partNumber: number, bytes: Uint8Array, enforce = true): boolean {
    const grant = this.partGrants.get(`${stagingId}#${partNumber}`);
    const upload = this.uploads.get(stagingId);
    if (grant === undefined || upload === undefined) return false;
    if (enforce && (bytes.length !== grant.size || sha256Hex(bytes) !== grant.sha256)) return false;
    upload.set(partNumber, bytes);
    return true;
  }
}
