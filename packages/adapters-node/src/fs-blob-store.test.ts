import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeBlobStoreContract, readAll } from '@strongroom/port-contracts';
import { FsBlobStore } from './fs-blob-store.js';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
async function* chunks(...parts: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield p;
}
async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
async function files(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name);
}
/**
 * A file rewritten after its seal has a later modification time. A clock coarser than the test
 * (some filesystems stamp in milliseconds or worse) might stamp the rewrite as the seal's own, so
 * the time is moved a second on rather than waited for.
 */
async function movedOn(path: string): Promise<void> {
  const { atime, mtime } = await stat(path);
  await utimes(path, atime, new Date(mtime.getTime() + 1_000));
}
/** Every file under `dir`, by its path from there. */
async function paths(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

describeBlobStoreContract('filesystem', async () => {
  const root = await mkdtemp(join(tmpdir(), 'blobs-'));
  return { store: new FsBlobStore(root), cleanup: () => rm(root, { recursive: true, force: true }) };
});

// What only the filesystem can show: no stray files, and ids that would escape the root refused.
describe('FsBlobStore on disk', () => {
  let root: string;
  let store: FsBlobStore;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'blobs-'));
    store = new FsBlobStore(root);
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('keeps the bytes to their owner: directories 0700, files 0600, whatever the umask', async () => {
    const previous = process.umask(0o022);
    try {
      const bytes = new TextEncoder().encode('sealed bytes');
      await store.stage('s1', chunks(bytes), 100);
      const staged = await stat(join(root, 'staging', 's1'));
      expect(staged.mode & 0o777).toBe(0o600);
      expect(await store.commit('s1', sha(bytes))).toBe('stored');
      const hash = sha(bytes);
      expect((await stat(join(root, 'blobs', hash.slice(0, 2), hash))).mode & 0o777).toBe(0o600);
      for (const dir of ['staging', 'blobs', join('blobs', hash.slice(0, 2))])
        expect((await stat(join(root, dir))).mode & 0o777).toBe(0o700);
    } finally {
      process.umask(previous);
    }
  });

  it('stages, then stores under the SHA-256 only when it matches', async () => {
    const bytes = new Uint8Array([1, 2, 3, 4, 5]);
    expect(await store.stage('u1', chunks(bytes.subarray(0, 2), bytes.subarray(2)), 5)).toEqual({
      size: 5,
      sha256: sha(bytes),
    });
    expect(await store.commit('u1', 'f'.repeat(64))).toBe('hash_mismatch');
    expect(await store.has('f'.repeat(64))).toBe(false);
    expect(await store.commit('u1', sha(bytes))).toBe('stored');
    expect(await readAll(await store.read(sha(bytes)))).toEqual(bytes);
    // Kept staged (a hard link: the bytes are on the disk once) until discarded.
    expect((await stat(join(root, 'staging', 'u1'))).nlink).toBe(2);
    await store.discard('u1');
    expect(await store.commit('u1', sha(bytes))).toBe('missing');
    await store.remove(sha(bytes));
    expect(await store.has(sha(bytes))).toBe(false);
    expect(await files(root)).toEqual([]);
  });

  it('two commits of one staging racing both store, and leave nothing but the blob and the staging', async () => {
    const bytes = new Uint8Array(64 * 1024).fill(9);
    for (let i = 0; i < 20; i++) {
      await store.stage(`race${i}`, chunks(bytes), bytes.length);
      const both = await Promise.all([store.commit(`race${i}`, sha(bytes)), store.commit(`race${i}`, sha(bytes))]);
      expect(both).toEqual(['stored', 'stored']);
      await store.discard(`race${i}`);
    }
    expect(await readAll(await store.read(sha(bytes)))).toEqual(bytes);
    expect(await paths(root)).toEqual([`blobs/${sha(bytes).slice(0, 2)}/${sha(bytes)}`]);
  });

  it('a staging re-staged while a commit hashes it: the commit moves what it hashed, never the new bytes', async () => {
    const first = new Uint8Array(256 * 1024).fill(1);
    const second = new Uint8Array(256 * 1024).fill(2);
    for (let i = 0; i < 10; i++) {
      await store.stage('swap', chunks(first), first.length);
      const [committed] = await Promise.all([
        store.commit('swap', sha(first)),
        store.stage('swap', chunks(second), second.length),
      ]);
      if (committed === 'stored') expect(sha((await readAll(await store.read(sha(first))))!)).toBe(sha(first));
      else expect(committed).toBe('hash_mismatch');
      await store.remove(sha(first));
    }
  });

  describe('the seal: the hash computed while the bytes streamed in, kept with them', () => {
    const first = new Uint8Array(64 * 1024).fill(1);
    const second = new Uint8Array(64 * 1024).fill(2);
    const staged = (id: string) => join(root, 'staging', id);

    it('commit takes the hash from the seal of the very file it links, without reading the bytes again', async () => {
      const big = new Uint8Array(16 * 1024 * 1024).fill(7);
      await store.stage('s', chunks(big), big.length);
      expect(JSON.parse(await readFile(`${staged('s')}.seal`, 'utf8'))).toMatchObject({
        size: big.length,
        sha256: sha(big),
      });
      // What this process has read through read(2) so far (Linux): a commit that hashed the
      // staged file again would add its 16 MiB.
      const readSoFar = async () => Number(/rchar: (\d+)/.exec(await readFile('/proc/self/io', 'utf8'))![1]);
      const before = await readSoFar();
      expect(await store.commit('s', sha(big))).toBe('stored');
      expect((await readSoFar()) - before).toBeLessThan(1024 * 1024);
      expect(sha((await readAll(await store.read(sha(big))))!)).toBe(sha(big));
    });

    it('a seal of another file (a stage cut short between its seal and its rename) is not trusted: the bytes are hashed', async () => {
      await store.stage('s', chunks(first), first.length);
      // What a crash leaves: the next stage's seal written, its bytes never renamed into place.
      await store.stage('next', chunks(second), second.length);
      await writeFile(`${staged('s')}.seal`, await readFile(`${staged('next')}.seal`));
      expect(await store.commit('s', sha(second))).toBe('hash_mismatch');
      expect(await store.has(sha(second))).toBe(false);
      expect(await store.commit('s', sha(first))).toBe('stored');
    });

    it('a torn, missing or lying seal, or a file written after it was sealed: hashed, never taken on trust', async () => {
      const cases: [string, (id: string) => Promise<void>][] = [
        ['torn', (id) => writeFile(`${staged(id)}.seal`, '{"dev":')],
        ['missing', (id) => rm(`${staged(id)}.seal`)],
        [
          'lying',
          async (id) => {
            const seal = JSON.parse(await readFile(`${staged(id)}.seal`, 'utf8'));
            await writeFile(`${staged(id)}.seal`, JSON.stringify({ ...seal, sha256: sha(second) }));
            // Its own bytes rewritten to match the lie, and so its modification time moves: set
            // apart from the sealed one, as a coarse filesystem clock might not move it by itself.
            await writeFile(staged(id), first);
            await movedOn(staged(id));
          },
        ],
        [
          'written after',
          async (id) => {
            await writeFile(staged(id), second);
            await movedOn(staged(id));
          },
        ],
      ];
      for (const [what, spoil] of cases) {
        await store.stage(what.replace(' ', '-'), chunks(first), first.length);
        await spoil(what.replace(' ', '-'));
        const bytes = what === 'written after' ? second : first;
        const other = what === 'written after' ? first : second;
        expect([what, await store.commit(what.replace(' ', '-'), sha(other))]).toEqual([what, 'hash_mismatch']);
        expect([what, await store.commit(what.replace(' ', '-'), sha(bytes))]).toEqual([what, 'stored']);
      }
    });

    it('a seal left without its bytes is listed as staged, so a sweep discards it; discard takes both', async () => {
      await store.stage('s', chunks(first), first.length);
      await rm(staged('s'));
      expect(await all(store.listStaged())).toEqual(['s']);
      expect(await store.commit('s', sha(first))).toBe('missing');
      await store.discard('s');
      expect(await files(root)).toEqual([]);
    });
  });

  it('quarantine is a rename under quarantine/, out of blobs/ and staging/, and back', async () => {
    const bytes = new Uint8Array([4, 5, 6]);
    await store.stage('qq', chunks(bytes), 3);
    expect(await store.commit('qq', sha(bytes))).toBe('stored');
    await store.discard('qq');
    const aside = (await store.quarantine(sha(bytes)))!;
    expect(await paths(root)).toEqual([`quarantine/${aside.id}`]);
    expect(aside.id).toMatch(new RegExp(`^${sha(bytes)}\\.[0-9a-f]{16}$`));
    expect((await stat(join(root, 'quarantine'))).mode & 0o777).toBe(0o700);
    await expect(store.dropQuarantined({ contentHash: sha(bytes), id: '../blobs/x' })).rejects.toThrow(RangeError);
    await expect(store.unquarantine({ contentHash: 'e'.repeat(64), id: aside.id })).rejects.toThrow(RangeError);
    await store.unquarantine(aside);
    expect(await paths(root)).toEqual([`blobs/${sha(bytes).slice(0, 2)}/${sha(bytes)}`]);
  });

  it('refuses bytes beyond the declared size and keeps nothing, not even an earlier staging', async () => {
    expect(await store.stage('u2', chunks(new Uint8Array(3)), 3)).not.toBeNull();
    expect(await store.stage('u2', chunks(new Uint8Array(3), new Uint8Array(1)), 3)).toBeNull();
    expect(await files(root)).toEqual([]);
    expect(await store.commit('u2', sha(new Uint8Array(3)))).toBe('missing');
  });

  it('a failing body leaves nothing behind', async () => {
    async function* broken(): AsyncIterable<Uint8Array> {
      yield new Uint8Array(2);
      throw new Error('connection reset');
    }
    await expect(store.stage('u3', broken(), 10)).rejects.toThrow('connection reset');
    expect(await files(root)).toEqual([]);
  });

  it('a read stopped early or refused for its range closes its file (no descriptor leaks per download)', async () => {
    const bytes = new Uint8Array(1024 * 1024).fill(3);
    await store.stage('fd', chunks(bytes), bytes.length);
    await store.commit('fd', sha(bytes));
    const openFds = async () => (await readdir('/proc/self/fd')).length;
    const before = await openFds();
    for (let i = 0; i < 50; i++) {
      const stream = (await store.read(sha(bytes), { start: 10, end: 500_000 }))!;
      for await (const _ of stream) break;
      await expect(store.read(sha(bytes), { start: 10, end: bytes.length })).rejects.toThrow(RangeError);
    }
    // A stream's file closes on a later tick than the loop's break: wait for it, within a bound.
    for (let i = 0; i < 100 && (await openFds()) > before + 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await openFds()).toBeLessThanOrEqual(before + 2);
  });

  it('discards staged bytes and rejects unsafe ids', async () => {
    await store.stage('u4', chunks(new Uint8Array(1)), 1);
    await store.discard('u4');
    expect(await files(root)).toEqual([]);
    await expect(store.stage('../x', chunks(), 1)).rejects.toThrow(RangeError);
  });
});
