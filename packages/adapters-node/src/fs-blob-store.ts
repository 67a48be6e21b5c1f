import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { BigIntStats } from 'node:fs';
import { copyFile, link, mkdir, open, readdir, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStat, BlobStore, ByteRange, ListedBlob, QuarantinedBlob, StagedBlob } from '@strongroom/core';

/**
 * Writes the whole chunk. A write may take only part of it (the disk filled up mid-chunk) without
 * failing; only the next write reports ENOSPC. Ignoring the count would keep a short file whose
 * hash the caller believes is the stream's.
 */
export async function writeAll(file: FileHandle, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) offset += (await file.write(chunk, offset, chunk.length - offset)).bytesWritten;
}

/**
 * Writes `chunks` (in order) whole with as few calls as it takes: one writev, then the rest of any
 * chunk it cut short, as writeAll does.
 */
async function writeAllv(file: FileHandle, chunks: Uint8Array[]): Promise<void> {
  let written = (await file.writev(chunks)).bytesWritten;
  for (const chunk of chunks) {
    if (written >= chunk.length) {
      written -= chunk.length;
      continue;
    }
    await writeAll(file, written === 0 ? chunk : chunk.subarray(written));
    written = 0;
  }
}

/**
 * How many received bytes stage gathers before it writes them: a request body arrives in chunks
 * of 64 KiB or less, and one write per chunk made the write calls (each a trip to libuv's thread
 * pool) the largest cost of a proxied upload beside the hash. Small enough that twenty uploads at
 * once hold a few MiB.
 */
const WRITE_BATCH_BYTES = 1024 * 1024;

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;
const HASH = /^[0-9a-f]{64}$/;
/** A quarantined copy's file name: its content hash and a random suffix of its own. */
const QUARANTINED = /^([0-9a-f]{64})\.([0-9a-f]{16})$/;
/** Errors of a filesystem that cannot hard-link here: the bytes are copied instead. */
const NO_LINK = new Set(['EXDEV', 'EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK', 'ENOSYS']);

/**
 * A staged file's seal, `staging/<id>.seal`: the SHA-256 and size stage computed of the bytes as
 * they streamed in, with the device, inode and modification time of the file it wrote them to.
 * Staged files are never written again once named, so while that inode is the staged file these
 * are its bytes' hash, and commit need not read them again. Numbers that may pass 2^53 are decimal
 * strings.
 */
interface Seal {
  readonly dev: string;
  readonly ino: string;
  readonly size: number;
  readonly mtimeNs: string;
  readonly sha256: string;
}
const SEAL = '.seal';
function sealOf(file: BigIntStats, staged: StagedBlob): Seal {
  return {
    dev: String(file.dev),
    ino: String(file.ino),
    size: staged.size,
    mtimeNs: String(file.mtimeNs),
    sha256: staged.sha256,
  };
}

const isMissing = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Content-addressed blobs on the local filesystem. Bytes arrive in a temp file under `staging/`
 * (fsynced, sealed with the hash computed as they arrived, then renamed to the staging id). A commit
 * hard-links them to a temp name (a copy where the filesystem cannot link), takes their hash from
 * the seal when it names that file (else hashes it), and renames it to `blobs/<2 hex>/<sha256>` only if its
 * SHA-256 matches: a crash or a wrong hash never leaves a partial blob under a content address,
 * and the staged file stays until discarded. The sweep's quarantine is `quarantine/<sha256>.<16
 * hex>`, moved there and back by rename.
 */
export class FsBlobStore implements BlobStore {
  readonly #staging: string;
  readonly #blobs: string;
  readonly #quarantine: string;
  constructor(readonly root: string) {
    this.#staging = join(root, 'staging');
    this.#blobs = join(root, 'blobs');
    this.#quarantine = join(root, 'quarantine');
  }

  #stagedPath(id: string): string {
    if (!SAFE_ID.test(id)) throw new RangeError('bad staging id');
    return join(this.#staging, id);
  }
  #blobPath(hash: string): string {
    if (!HASH.test(hash)) throw new RangeError('bad content hash');
    return join(this.#blobs, hash.slice(0, 2), hash);
  }

  async stage(stagingId: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StagedBlob | null> {
    const target = this.#stagedPath(stagingId);
    await mkdir(this.#staging, { recursive: true, mode: 0o700 });
    const temp = `${target}.${randomBytes(6).toString('hex')}.part`;
    const file = await open(temp, 'wx', 0o600);
    const hash = createHash('sha256');
    let size = 0;
    let keep = false;
    let written: BigIntStats;
    try {
      let pending: Uint8Array[] = [];
      let pendingBytes = 0;
      for await (const chunk of body) {
        size += chunk.length;
        if (size > maxBytes) return null;
        hash.update(chunk);
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes >= WRITE_BATCH_BYTES) {
          await writeAllv(file, pending);
          pending = [];
          pendingBytes = 0;
        }
      }
      if (pendingBytes > 0) await writeAllv(file, pending);
      await file.sync();
      written = await file.stat({ bigint: true });
      keep = true;
    } finally {
      await file.close();
      if (!keep) {
        await rm(temp, { force: true });
        await rm(`${target}${SEAL}`, { force: true });
        await rm(target, { force: true });
      }
    }
    const staged = { size, sha256: hash.digest('hex') };
    // The seal before the name: a seal only ever names the file it describes, so a crash between
    // the two leaves the old file under a seal of another inode, which commit does not trust.
    await this.#seal(target, sealOf(written, staged));
    await rename(temp, target);
    // The rename is durable only once the directory is: a resumable upload's offset is
    // acknowledged on the strength of this staged file, so its name must survive a power cut too.
    const dir = await open(this.#staging, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    return staged;
  }

  /** Writes `<target>.seal` whole or not at all (a temp file, fsynced, renamed over). */
  async #seal(target: string, seal: Seal): Promise<void> {
    const temp = `${target}${SEAL}.${randomBytes(6).toString('hex')}.part`;
    const file = await open(temp, 'wx', 0o600);
    try {
      await writeAll(file, new TextEncoder().encode(JSON.stringify(seal)));
      await file.sync();
    } catch (e) {
      await file.close();
      await rm(temp, { force: true });
      throw e;
    }
    await file.close();
    await rename(temp, `${target}${SEAL}`);
  }

  /**
   * The SHA-256 that stage computed of the file at `path` (a link of the staged file), when the
   * staging's seal names that very file: the same device and inode, size and modification time.
   * Null otherwise (no seal, a torn one, or one of another file), and the caller hashes.
   */
  async #sealedHash(stagingId: string, path: string): Promise<string | null> {
    let seal: Seal;
    try {
      seal = JSON.parse(await readFile(`${this.#stagedPath(stagingId)}${SEAL}`, 'utf8')) as Seal;
    } catch {
      return null;
    }
    const now = await stat(path, { bigint: true });
    const expected = sealOf(now, { size: Number(now.size), sha256: seal.sha256 });
    return typeof seal.sha256 === 'string' &&
      HASH.test(seal.sha256) &&
      seal.dev === expected.dev &&
      seal.ino === expected.ino &&
      seal.size === expected.size &&
      seal.mtimeNs === expected.mtimeNs
      ? seal.sha256
      : null;
  }

  async commit(stagingId: string, contentHash: string): Promise<'stored' | 'hash_mismatch' | 'missing'> {
    const staged = this.#stagedPath(stagingId);
    const final = this.#blobPath(contentHash);
    // A name of our own for the staged bytes, hashed there: a re-staging of the id meanwhile
    // replaces the staged file, never the file this commit hashes and moves.
    const temp = `${staged}.${randomBytes(6).toString('hex')}.commit`;
    try {
      await link(staged, temp);
    } catch (e) {
      if (isMissing(e)) return 'missing';
      if (!NO_LINK.has((e as NodeJS.ErrnoException).code ?? '')) throw e;
      try {
        await copyFile(staged, temp);
        const copy = await open(temp, 'r+');
        try {
          await copy.sync();
        } finally {
          await copy.close();
        }
      } catch (copyError) {
        await rm(temp, { force: true });
        if (isMissing(copyError)) return 'missing';
        throw copyError;
      }
    }
    try {
      // The link names the same inode as the staged file: a seal of that inode holds the hash
      // stage computed of these bytes as they arrived. A copy (no hard links here) is a new
      // inode, so it is hashed, as is a file with no seal of its own.
      let hashed = await this.#sealedHash(stagingId, temp);
      if (hashed === null) {
        const hash = createHash('sha256');
        for await (const chunk of createReadStream(temp)) hash.update(chunk as Buffer);
        hashed = hash.digest('hex');
      }
      if (hashed !== contentHash) return 'hash_mismatch';
      // Bytes already verified at the address stay as they are; anything else there is replaced
      // by these, which were hashed under a name only this commit knows (atomic, never absent between).
      if ((await this.digest(contentHash))?.sha256 === contentHash) return 'stored';
      await mkdir(join(this.#blobs, contentHash.slice(0, 2)), { recursive: true, mode: 0o700 });
      await rename(temp, final);
      return 'stored';
    } finally {
      await rm(temp, { force: true });
    }
  }

  async discard(stagingId: string): Promise<void> {
    const staged = this.#stagedPath(stagingId);
    await rm(staged, { force: true });
    await rm(`${staged}${SEAL}`, { force: true });
  }
  async readStaged(stagingId: string): Promise<AsyncIterable<Uint8Array> | null> {
    let file: FileHandle;
    try {
      file = await open(this.#stagedPath(stagingId), 'r');
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    // Opened before returning, so a file that goes meanwhile is still read whole.
    return file.createReadStream();
  }
  async digest(contentHash: string): Promise<StagedBlob | null> {
    const hash = createHash('sha256');
    let size = 0;
    try {
      for await (const chunk of createReadStream(this.#blobPath(contentHash))) {
        size += (chunk as Buffer).length;
        hash.update(chunk as Buffer);
      }
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    return { size, sha256: hash.digest('hex') };
  }
  async has(contentHash: string): Promise<boolean> {
    try {
      return (await stat(this.#blobPath(contentHash))).isFile();
    } catch {
      return false;
    }
  }
  async stat(contentHash: string): Promise<BlobStat | null> {
    try {
      const s = await stat(this.#blobPath(contentHash));
      return s.isFile() ? { size: s.size } : null;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }
  async read(contentHash: string, range?: ByteRange): Promise<AsyncIterable<Uint8Array> | null> {
    let file: FileHandle;
    try {
      file = await open(this.#blobPath(contentHash), 'r');
    } catch (e) {
      // Only a missing file is "no blob"; a permission or I/O error must fail the read, not look empty.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    if (range !== undefined) {
      let size: number;
      try {
        size = (await file.stat()).size;
      } catch (e) {
        await file.close();
        throw e;
      }
      if (!(range.start >= 0 && range.start <= range.end && range.end < size)) {
        await file.close();
        throw new RangeError('range outside the blob');
      }
    }
    // The stream owns the handle from here: reading to the end, an error or an early return()
    // (the HTTP response cancelled) destroys the stream, which closes the file.
    return file.createReadStream({ start: range?.start, end: range?.end, autoClose: true, highWaterMark: 64 * 1024 });
  }
  async remove(contentHash: string): Promise<void> {
    await rm(this.#blobPath(contentHash), { force: true });
  }
  async stream(contentHash: string): Promise<AsyncIterable<Uint8Array> | null> {
    return this.read(contentHash);
  }

  #quarantinedPath(blob: QuarantinedBlob): string {
    const m = QUARANTINED.exec(blob.id);
    if (m === null || m[1] !== blob.contentHash) throw new RangeError('bad quarantined blob');
    return join(this.#quarantine, blob.id);
  }
  async quarantine(contentHash: string): Promise<QuarantinedBlob | null> {
    const from = this.#blobPath(contentHash);
    await mkdir(this.#quarantine, { recursive: true, mode: 0o700 });
    const blob = { contentHash, id: `${contentHash}.${randomBytes(8).toString('hex')}` };
    try {
      await rename(from, this.#quarantinedPath(blob));
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    return blob;
  }
  async unquarantine(blob: QuarantinedBlob): Promise<void> {
    const from = this.#quarantinedPath(blob);
    await mkdir(join(this.#blobs, blob.contentHash.slice(0, 2)), { recursive: true, mode: 0o700 });
    try {
      // Over bytes committed there meanwhile, which are the same: atomic, never absent between.
      await rename(from, this.#blobPath(blob.contentHash));
    } catch (e) {
      if (!isMissing(e)) throw e;
    }
    // A rename between two links of one file (committed again from the same staging) does
    // nothing and succeeds: the copy's own link goes here.
    await rm(from, { force: true });
  }
  async dropQuarantined(blob: QuarantinedBlob): Promise<void> {
    await rm(this.#quarantinedPath(blob), { force: true });
  }
  async *listQuarantined(): AsyncIterable<QuarantinedBlob> {
    yield* await this.#quarantinedNow();
  }
  /**
   * One directory read: it holds only what interrupted sweeps left (a name or two), so a read
   * that misses can afford it; a layout per hash would buy nothing here.
   */
  async quarantinedCopies(contentHash: string): Promise<readonly QuarantinedBlob[]> {
    if (!HASH.test(contentHash)) throw new RangeError('bad content hash');
    return (await this.#quarantinedNow()).filter((q) => q.contentHash === contentHash);
  }
  async #quarantinedNow(): Promise<QuarantinedBlob[]> {
    let names: string[];
    try {
      names = await readdir(this.#quarantine);
    } catch (e) {
      if (isMissing(e)) return [];
      throw e;
    }
    const out: QuarantinedBlob[] = [];
    for (const name of names) {
      const m = QUARANTINED.exec(name);
      if (m !== null) out.push({ contentHash: m[1]!, id: name });
    }
    return out;
  }

  /**
   * Staged ids: the finished files under `staging/` (a `.part` being written is not one yet), and
   * the ids of seals left without their file (a stage or a discard cut short), so a sweep's
   * discard takes those too.
   */
  async *listStaged(): AsyncIterable<string> {
    let names: string[];
    try {
      names = await readdir(this.#staging);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    const ids = new Set<string>();
    for (const name of names) {
      const id = name.endsWith(SEAL) ? name.slice(0, -SEAL.length) : name;
      if (SAFE_ID.test(id)) ids.add(id);
    }
    yield* ids;
  }
  /** A local disk fails with its machine: a backup copies the bytes. */
  readonly backupMode = 'copy';

  /** `blobs/<2 hex>/<sha256>` in hash order, one directory at a time; stray names are skipped. */
  async *list(): AsyncIterable<ListedBlob> {
    const names = async (dir: string): Promise<string[]> => {
      try {
        return (await readdir(dir)).sort();
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw e;
      }
    };
    for (const shard of await names(this.#blobs)) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const name of await names(join(this.#blobs, shard))) {
        if (!HASH.test(name) || !name.startsWith(shard)) continue;
        const st = await stat(join(this.#blobs, shard, name));
        if (st.isFile()) yield { contentHash: name, size: st.size };
      }
    }
  }
}
