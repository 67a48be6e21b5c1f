import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStat, BlobStore, ByteRange, ListedBlob, StagedBlob } from '@strongroom/core';

/**
 * Writes the whole chunk. A write may take only part of it (the disk filled up mid-chunk) without
 * failing; only the next write reports ENOSPC. Ignoring the count would keep a short file whose
 * hash the caller believes is the stream's.
 */
export async function writeAll(file: FileHandle, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) offset += (await file.write(chunk, offset, chunk.length - offset)).bytesWritten;
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;
const HASH = /^[0-9a-f]{64}$/;

/**
 * Content-addressed blobs on the local filesystem. Bytes arrive in a temp file under `staging/`
 * (fsynced, then renamed to the staging id), and move to `blobs/<2 hex>/<sha256>` by rename only
 * after their SHA-256 is recomputed and matches: a crash or a wrong hash never leaves a partial
 * blob under a content address.
 */
export class FsBlobStore implements BlobStore {
  readonly #staging: string;
  readonly #blobs: string;
  constructor(readonly root: string) {
    this.#staging = join(root, 'staging');
    this.#blobs = join(root, 'blobs');
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
    try {
      for await (const chunk of body) {
        size += chunk.length;
        if (size > maxBytes) return null;
        hash.update(chunk);
        await writeAll(file, chunk);
      }
      await file.sync();
      keep = true;
    } finally {
      await file.close();
      if (!keep) {
        await rm(temp, { force: true });
        await rm(target, { force: true });
      }
    }
    await rename(temp, target);
    return { size, sha256: hash.digest('hex') };
  }

  async commit(stagingId: string, contentHash: string): Promise<'stored' | 'hash_mismatch' | 'missing'> {
    const staged = this.#stagedPath(stagingId);
    const final = this.#blobPath(contentHash);
    const hash = createHash('sha256');
    try {
      for await (const chunk of createReadStream(staged)) hash.update(chunk as Buffer);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
      throw e;
    }
    if (hash.digest('hex') !== contentHash) return 'hash_mismatch';
    await mkdir(join(this.#blobs, contentHash.slice(0, 2)), { recursive: true, mode: 0o700 });
    // Same hash, same bytes: renaming over an existing blob is harmless and atomic.
    try {
      await rename(staged, final);
    } catch (e) {
      // A concurrent commit of the same staging id moved the bytes first: nothing to move here (the
      // upload store decides which finalize counts, once per session).
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
      throw e;
    }
    return 'stored';
  }

  async discard(stagingId: string): Promise<void> {
    await rm(this.#stagedPath(stagingId), { force: true });
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
  /** Staged ids: the finished files under `staging/` (a `.part` being written is not one yet). */
  async *listStaged(): AsyncIterable<string> {
    let names: string[];
    try {
      names = await readdir(this.#staging);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    for (const name of names) if (SAFE_ID.test(name)) yield name;
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
