import { describe, expect, it } from 'vitest';
import { sha256Hex, type BlobStore } from '@strongroom/core';

/** Makes a fresh, empty blob store for one test; `cleanup` releases it. */
export type BlobSetup = () => Promise<{ store: BlobStore; cleanup?: () => Promise<void> | void }>;

async function* chunks(...parts: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield p;
}

/** Reads a stream to its end into one array (tests only: the point of `read` is not to do this). */
export async function readAll(stream: AsyncIterable<Uint8Array> | null): Promise<Uint8Array | null> {
  if (stream === null) return null;
  const parts: Uint8Array[] = [];
  for await (const c of stream) parts.push(new Uint8Array(c.buffer, c.byteOffset, c.byteLength));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Large arrays compare by length and digest: element-wise deep equality of megabytes is slow. */
function digest(bytes: Uint8Array | null): string | null {
  return bytes === null ? null : `${bytes.length}:${sha256Hex(bytes)}`;
}

async function store(s: BlobStore, id: string, bytes: Uint8Array): Promise<string> {
  const hash = sha256Hex(bytes);
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += 100_000) parts.push(bytes.subarray(at, at + 100_000));
  await s.stage(id, chunks(...parts), bytes.length);
  expect(await s.commit(id, hash)).toBe('stored');
  return hash;
}

function pattern(size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + (i >>> 8)) & 0xff;
  return out;
}

async function using(setup: BlobSetup, body: (s: BlobStore) => Promise<void>): Promise<void> {
  const { store, cleanup } = await setup();
  try {
    await body(store);
  } finally {
    await cleanup?.();
  }
}

/**
 * The BlobStore contract: staged bytes become a blob only under their own SHA-256, nothing over
 * the declared size or from a failed body is kept, and blobs are content-addressed (one copy).
 * A commit keeps the staged bytes until they are discarded; quarantine moves a blob aside under a
 * key of its own, from which it is put back or dropped (the GC sweep's hand-over), found by its
 * hash when a read misses, and put back by a reader beside a sweep without loss.
 * Reading back streams, by inclusive range when asked, and a missing blob is null, never empty.
 * Run by the filesystem store, the S3 one (adapters-node) and the in-memory one.
 */
export function describeBlobStoreContract(name: string, setup: BlobSetup): void {
  describe(`BlobStore contract: ${name}`, () => {
    it('stores staged bytes under their SHA-256 only, once', () =>
      using(setup, async (s) => {
        const bytes = new Uint8Array([1, 2, 3, 4, 5]);
        const hash = sha256Hex(bytes);
        expect(await s.stage('u1', chunks(bytes.subarray(0, 2), bytes.subarray(2)), 5)).toEqual({
          size: 5,
          sha256: hash,
        });
        expect(await s.commit('u1', 'f'.repeat(64))).toBe('hash_mismatch');
        expect(await s.has('f'.repeat(64))).toBe(false);
        expect(await s.commit('u1', hash)).toBe('stored');
        expect(await s.has(hash)).toBe(true);
        expect(await readAll(await s.read(hash))).toEqual(bytes);
        await s.discard('u1');
        expect(await s.commit('u1', hash)).toBe('missing');
        await s.remove(hash);
        expect(await s.has(hash)).toBe(false);
        expect(await s.read(hash)).toBeNull();
        expect(await s.stat(hash)).toBeNull();
      }));

    it('refuses bytes beyond the limit and keeps nothing, not even an earlier staging', () =>
      using(setup, async (s) => {
        const three = new Uint8Array(3).fill(7);
        expect(await s.stage('u2', chunks(three), 3)).not.toBeNull();
        expect(await s.stage('u2', chunks(three, new Uint8Array(1)), 3)).toBeNull();
        expect(await s.commit('u2', sha256Hex(three))).toBe('missing');
      }));

    it('a body that fails midway leaves nothing staged', () =>
      using(setup, async (s) => {
        async function* broken(): AsyncIterable<Uint8Array> {
          yield new Uint8Array(2);
          throw new Error('connection reset');
        }
        await expect(s.stage('u3', broken(), 10)).rejects.toThrow('connection reset');
        expect(await s.commit('u3', sha256Hex(new Uint8Array(2)))).toBe('missing');
      }));

    it("reads staged bytes back as a stream (a resumable upload's runs), null once discarded or never staged", () =>
      using(setup, async (s) => {
        const bytes = pattern(300_000);
        await s.stage('u9_0_ab', chunks(bytes.subarray(0, 100_000), bytes.subarray(100_000)), bytes.length);
        expect(digest(await readAll(await s.readStaged('u9_0_ab')))).toBe(digest(bytes));
        await s.discard('u9_0_ab');
        expect(await s.readStaged('u9_0_ab')).toBeNull();
        expect(await s.readStaged('never-staged')).toBeNull();
      }));

    it('re-staging replaces the earlier bytes; discard drops them', () =>
      using(setup, async (s) => {
        const a = new Uint8Array([1]);
        const b = new Uint8Array([2, 2]);
        await s.stage('u4', chunks(a), 5);
        expect(await s.stage('u4', chunks(b), 5)).toEqual({ size: 2, sha256: sha256Hex(b) });
        expect(await s.commit('u4', sha256Hex(a))).toBe('hash_mismatch');
        await s.discard('u4');
        expect(await s.commit('u4', sha256Hex(b))).toBe('missing');
        await s.discard('never-staged');
      }));

    it('streams a stored blob whole, and an absent one as null', () =>
      using(setup, async (s) => {
        const bytes = new Uint8Array(3 * 1024 + 7).map((_, i) => i % 251);
        const hash = sha256Hex(bytes);
        await s.stage('st', chunks(bytes.subarray(0, 1000), bytes.subarray(1000)), bytes.length);
        expect(await s.commit('st', hash)).toBe('stored');
        const stream = await s.stream(hash);
        expect(stream).not.toBeNull();
        const parts: Uint8Array[] = [];
        for await (const c of stream!) parts.push(new Uint8Array(c));
        expect(sha256Hex(new Uint8Array(Buffer.concat(parts)))).toBe(hash);
        expect(await s.stream('e'.repeat(64))).toBeNull();
        expect(['copy', 'manifest']).toContain(s.backupMode);
      }));

    it('two uploads of the same bytes share one blob', () =>
      using(setup, async (s) => {
        const bytes = new Uint8Array(64).fill(9);
        const hash = sha256Hex(bytes);
        await s.stage('x1', chunks(bytes), 64);
        await s.stage('x2', chunks(bytes), 64);
        expect(await s.commit('x1', hash)).toBe('stored');
        expect(await s.commit('x2', hash)).toBe('stored');
        expect(await readAll(await s.read(hash))).toEqual(bytes);
        await s.remove(hash);
        expect(await s.has(hash)).toBe(false);
        await s.remove(hash);
      }));

    it('digest hashes what is at the address itself: size and SHA-256, null when nothing is there', () =>
      using(setup, async (s) => {
        const bytes = pattern(300_000);
        const hash = await store(s, 'dg', bytes);
        expect(await s.digest(hash)).toEqual({ size: 300_000, sha256: hash });
        expect(await s.digest('e'.repeat(64))).toBeNull();
        await s.remove(hash);
        expect(await s.digest(hash)).toBeNull();
      }));

    it('a commit never replaces bytes already verified at the address, and a second commit of other staged bytes under that hash is refused', () =>
      using(setup, async (s) => {
        const bytes = pattern(2000);
        const hash = await store(s, 'nw1', bytes);
        await s.stage('nw2', chunks(bytes), bytes.length);
        expect(await s.commit('nw2', hash)).toBe('stored');
        await s.stage('nw3', chunks(pattern(1999)), 2000);
        expect(await s.commit('nw3', hash)).toBe('hash_mismatch');
        expect(await s.digest(hash)).toEqual({ size: 2000, sha256: hash });
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
      }));

    it('stat answers the stored size, null for a hash never stored or removed', () =>
      using(setup, async (s) => {
        const bytes = pattern(1000);
        const hash = await store(s, 'st', bytes);
        expect(await s.stat(hash)).toEqual({ size: 1000 });
        expect(await s.stat('e'.repeat(64))).toBeNull();
        await s.remove(hash);
        expect(await s.stat(hash)).toBeNull();
      }));

    it('read streams the whole blob in chunks, never as one buffer; unknown is null', () =>
      using(setup, async (s) => {
        const bytes = pattern(3 * 1024 * 1024 + 7);
        const hash = await store(s, 'big', bytes);
        const stream = await s.read(hash);
        expect(stream).not.toBeNull();
        let chunksSeen = 0;
        let largest = 0;
        const parts: Uint8Array[] = [];
        for await (const c of stream!) {
          chunksSeen++;
          largest = Math.max(largest, c.length);
          parts.push(c);
        }
        expect(chunksSeen).toBeGreaterThan(2);
        expect(largest).toBeLessThanOrEqual(1024 * 1024);
        expect(digest(await readAll(chunks(...parts)))).toBe(digest(bytes));
        expect(await s.read('e'.repeat(64))).toBeNull();
        expect(await s.read('e'.repeat(64), { start: 0, end: 0 })).toBeNull();
      }));

    it('read serves an inclusive range: first byte, middle, last byte, the whole blob', () =>
      using(setup, async (s) => {
        const bytes = pattern(200_000);
        const hash = await store(s, 'rg', bytes);
        expect(digest(await readAll(await s.read(hash, { start: 0, end: 0 })))).toBe(digest(bytes.subarray(0, 1)));
        expect(digest(await readAll(await s.read(hash, { start: 1000, end: 150_999 })))).toBe(
          digest(bytes.subarray(1000, 151_000)),
        );
        expect(digest(await readAll(await s.read(hash, { start: 199_999, end: 199_999 })))).toBe(
          digest(bytes.subarray(199_999)),
        );
        expect(digest(await readAll(await s.read(hash, { start: 0, end: 199_999 })))).toBe(digest(bytes));
      }));

    it('a range outside the blob is refused, not served short', () =>
      using(setup, async (s) => {
        const hash = await store(s, 'ro', pattern(10));
        await expect(s.read(hash, { start: 5, end: 10 })).rejects.toThrow();
        await expect(s.read(hash, { start: 10, end: 10 })).rejects.toThrow();
        await expect(s.read(hash, { start: 6, end: 5 })).rejects.toThrow();
      }));

    it('an empty blob reads as no bytes, distinct from a missing one', () =>
      using(setup, async (s) => {
        const hash = await store(s, 'em', new Uint8Array(0));
        expect(await s.stat(hash)).toEqual({ size: 0 });
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(new Uint8Array(0)));
      }));

    it('a read stopped early releases the blob: it can be removed, and read again whole', () =>
      using(setup, async (s) => {
        const bytes = pattern(2 * 1024 * 1024);
        const hash = await store(s, 'es', bytes);
        for (let i = 0; i < 3; i++) {
          const stream = await s.read(hash);
          for await (const c of stream!) {
            expect(c.length).toBeGreaterThan(0);
            break;
          }
        }
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
        await s.remove(hash);
        expect(await s.read(hash)).toBeNull();
      }));

    it('presignGet, where a store has it, serves the same bytes and ranges with the headers asked for; otherwise it is absent', () =>
      using(setup, async (s) => {
        const bytes = pattern(5000);
        const hash = await store(s, 'ps', bytes);
        if (s.presignGet === undefined) {
          expect('presignGet' in s).toBe(false);
          return;
        }
        const answer = {
          cacheControl: 'private, max-age=31536000, immutable',
          contentType: 'application/octet-stream',
        };
        const url = await s.presignGet(hash, 60, answer);
        const whole = await fetch(url);
        expect(whole.status).toBe(200);
        expect(whole.headers.get('cache-control')).toBe(answer.cacheControl);
        expect(whole.headers.get('content-type')).toBe(answer.contentType);
        expect(digest(new Uint8Array(await whole.arrayBuffer()))).toBe(digest(bytes));
        const part = await fetch(url, { headers: { range: 'bytes=10-19' } });
        expect(part.status).toBe(206);
        expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(10, 20));
      }));

    it('presignPut and arrived, where a store has them: exactly the granted bytes arrive, are hashed and commit; nothing else does', () =>
      using(setup, async (s) => {
        if (s.presignPut === undefined || s.arrived === undefined) {
          expect('presignPut' in s || 'arrived' in s).toBe(false);
          return;
        }
        const bytes = pattern(3000);
        const hash = sha256Hex(bytes);
        expect(await s.arrived('dp-none', 3000)).toBe('nothing');
        const put = await s.presignPut('dp1', { size: 3000, sha256: hash, ttlS: 60 });
        // Another length, or a body without the signed checksum header, is refused by the signature.
        const short = await fetch(put.url, {
          method: 'PUT',
          headers: { ...put.headers, 'content-length': '2999' },
          body: new Uint8Array(bytes.subarray(0, 2999)),
        });
        expect(short.status).toBe(403);
        const bare = await fetch(put.url, {
          method: 'PUT',
          headers: { 'content-length': '3000' },
          body: new Uint8Array(bytes),
        });
        expect(bare.status).toBe(403);
        expect(await s.arrived('dp1', 3000)).toBe('nothing');
        const sent = await fetch(put.url, { method: 'PUT', headers: put.headers, body: new Uint8Array(bytes) });
        expect(sent.status).toBe(200);
        expect(await s.arrived('dp1', 3000)).toEqual({ size: 3000, sha256: hash });
        expect(await s.has(hash)).toBe(false);
        expect(await s.commit('dp1', hash)).toBe('stored');
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
        // Without an announced hash any bytes of the granted length arrive; past maxBytes they are dropped.
        const open = await s.presignPut('dp2', { size: 10, sha256: null, ttlS: 60 });
        expect(
          (await fetch(open.url, { method: 'PUT', headers: open.headers, body: new Uint8Array(bytes.subarray(0, 10)) }))
            .status,
        ).toBe(200);
        expect(await s.arrived('dp2', 9)).toBe('too_large');
        expect(await s.arrived('dp2', 10)).toBe('nothing');
      }));

    it('multipart, where a store has it: signed parts of one upload per staging id, listed as they arrive, completed into the staged object or aborted', () =>
      using(setup, async (s) => {
        const m = s.multipart;
        if (m === undefined) {
          expect('multipart' in s).toBe(false);
          return;
        }
        const open = async () => {
          const ids: string[] = [];
          for await (const id of m.listOpen()) ids.push(id);
          return ids.sort();
        };
        // S3's smallest part but the last is 5 MiB.
        const bytes = pattern(5 * 1024 * 1024 + 100);
        const one = bytes.subarray(0, 5 * 1024 * 1024);
        const two = bytes.subarray(5 * 1024 * 1024);
        const grant = (partNumber: number, part: Uint8Array) => ({
          partNumber,
          size: part.length,
          sha256: sha256Hex(part),
          ttlS: 60,
        });
        expect(await m.parts('mp-none')).toBeNull();
        expect(await m.complete('mp-none', [])).toBe('nothing');
        const [, p2] = await m.presignParts('mp1', [grant(1, one), grant(2, two)]);
        expect(await m.parts('mp1')).toEqual([]);
        expect(await open()).toContain('mp1');
        const put = (url: string, headers: Readonly<Record<string, string>>, body: Uint8Array) =>
          fetch(url, { method: 'PUT', headers, body: new Uint8Array(body) });
        // Another length, or the URL of part 2 used for part 1, is refused by the signature.
        expect((await put(p2!.url, { ...p2!.headers, 'content-length': '99' }, two.subarray(1))).status).toBe(403);
        const moved = new URL(p2!.url);
        moved.searchParams.set('partNumber', '1');
        expect((await put(moved.toString(), p2!.headers, two)).status).toBe(403);
        expect(await m.parts('mp1')).toEqual([]);
        expect((await put(p2!.url, p2!.headers, two)).status).toBe(200);
        // A second signing names the same upload: what arrived stays.
        const [again] = await m.presignParts('mp1', [grant(1, one)]);
        expect((await put(again!.url, again!.headers, one)).status).toBe(200);
        const held = (await m.parts('mp1')) ?? [];
        expect(held.map((p) => [p.partNumber, p.size])).toEqual([
          [1, one.length],
          [2, two.length],
        ]);
        expect(await s.arrived?.('mp1', bytes.length)).toBe('nothing');
        expect(await m.complete('mp1', held)).toBe('completed');
        expect(await s.arrived?.('mp1', bytes.length)).toEqual({ size: bytes.length, sha256: sha256Hex(bytes) });
        expect(await m.parts('mp1')).toBeNull();
        expect(await m.complete('mp1', held)).toBe('nothing');
        expect(await open()).not.toContain('mp1');
        // Aborted: its parts go, and a second abort is nothing to do.
        const [p3] = await m.presignParts('mp2', [grant(1, two)]);
        expect((await put(p3!.url, p3!.headers, two)).status).toBe(200);
        await m.abort('mp2');
        expect(await m.parts('mp2')).toBeNull();
        expect(await open()).not.toContain('mp2');
        await m.abort('mp2');
        expect(await s.arrived?.('mp2', bytes.length)).toBe('nothing');
      }));

    it('list names every committed blob once, in hash order, with its size; never staging', () =>
      using(setup, async (s) => {
        const all = async () => {
          const out: { contentHash: string; size: number }[] = [];
          for await (const b of s.list()) out.push(b);
          return out;
        };
        expect(await all()).toEqual([]);
        const hashes = [
          await store(s, 'l1', pattern(10)),
          await store(s, 'l2', pattern(2000)),
          await store(s, 'l3', pattern(1)),
        ];
        await s.stage('l4', chunks(pattern(7)), 7);
        const listed = await all();
        expect(listed.map((b) => b.contentHash)).toEqual([...hashes].sort());
        expect(listed.find((b) => b.contentHash === hashes[1])?.size).toBe(2000);
        await s.remove(hashes[0]!);
        expect((await all()).map((b) => b.contentHash)).toEqual(hashes.slice(1).sort());
      }));
    it('listStaged names what is staged now: not committed, discarded or refused ids, never content addresses', () =>
      using(setup, async (s) => {
        const staged = async () => {
          const out: string[] = [];
          for await (const id of s.listStaged()) out.push(id);
          return out.sort();
        };
        expect(await staged()).toEqual([]);
        await store(s, 'ls-committed', pattern(5));
        await s.discard('ls-committed');
        await store(s, 'ls-committed-kept', pattern(3));
        await s.stage('ls-kept', chunks(pattern(6)), 6);
        await s.stage('ls-discarded', chunks(pattern(7)), 7);
        await s.discard('ls-discarded');
        expect(await s.stage('ls-refused', chunks(pattern(9)), 8)).toBeNull();
        await s.stage('0190c000-0000-7000-8000-0000000000aa', chunks(pattern(4)), 4);
        expect(await staged()).toEqual(['0190c000-0000-7000-8000-0000000000aa', 'ls-committed-kept', 'ls-kept']);
      }));

    it('commit keeps the staged bytes until discarded: a second commit puts the blob back after it went', () =>
      using(setup, async (s) => {
        const bytes = pattern(4000);
        const hash = await store(s, 'ck', bytes);
        await s.remove(hash);
        expect(await s.has(hash)).toBe(false);
        expect(await s.commit('ck', hash)).toBe('stored');
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
        // Committed over the blob already there: the same bytes, still whole.
        expect(await s.commit('ck', hash)).toBe('stored');
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
        await s.discard('ck');
        expect(await s.commit('ck', hash)).toBe('missing');
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
      }));

    it('quarantine moves a blob aside: absent at its address, never listed as a blob or as staging', () =>
      using(setup, async (s) => {
        const bytes = pattern(3000);
        const hash = await store(s, 'q1', bytes);
        await s.discard('q1');
        const other = await store(s, 'q2', pattern(10));
        await s.discard('q2');
        expect(await s.quarantine('e'.repeat(64))).toBeNull();
        const aside = await s.quarantine(hash);
        expect(aside).toMatchObject({ contentHash: hash });
        expect(await s.has(hash)).toBe(false);
        expect(await s.stat(hash)).toBeNull();
        expect(await s.read(hash)).toBeNull();
        expect(await s.quarantine(hash)).toBeNull();
        const listed: string[] = [];
        for await (const b of s.list()) listed.push(b.contentHash);
        expect(listed).toEqual([other]);
        const staged: string[] = [];
        for await (const id of s.listStaged()) staged.push(id);
        expect(staged).toEqual([]);
        const quarantined: { contentHash: string; id: string }[] = [];
        for await (const q of s.listQuarantined()) quarantined.push(q);
        expect(quarantined).toEqual([aside]);
        // Put back, it is whole at its address again and no longer aside; twice is harmless.
        await s.unquarantine(aside!);
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
        await s.unquarantine(aside!);
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
        for await (const q of s.listQuarantined()) expect.unreachable(`still quarantined: ${q.id}`);
      }));

    it('each quarantine is a copy of its own: dropping one leaves another, and an address committed again keeps its bytes', () =>
      using(setup, async (s) => {
        const bytes = pattern(2000);
        const hash = await store(s, 'q3', bytes);
        const first = await s.quarantine(hash);
        expect(await s.commit('q3', hash)).toBe('stored');
        const second = await s.quarantine(hash);
        expect(first).not.toBeNull();
        expect(second).not.toBeNull();
        expect(second!.id).not.toBe(first!.id);
        await s.dropQuarantined(first!);
        await s.dropQuarantined(first!);
        const left: string[] = [];
        for await (const q of s.listQuarantined()) left.push(q.id);
        expect(left).toEqual([second!.id]);
        // Committed again while aside: putting the copy back keeps the blob whole and drops the copy.
        expect(await s.commit('q3', hash)).toBe('stored');
        await s.unquarantine(second!);
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
        for await (const q of s.listQuarantined()) expect.unreachable(`still quarantined: ${q.id}`);
        // A dropped copy is gone for good: putting it back is nothing to do.
        const third = await s.quarantine(hash);
        await s.dropQuarantined(third!);
        await s.unquarantine(third!);
        expect(await s.has(hash)).toBe(false);
        // The staging kept through all of it commits the blob once more.
        expect(await s.commit('q3', hash)).toBe('stored');
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
      }));

    it("quarantinedCopies names the copies of one hash, and none of another's", () =>
      using(setup, async (s) => {
        const bytes = pattern(1500);
        const hash = await store(s, 'q4', bytes);
        const other = await store(s, 'q5', pattern(20));
        expect(await s.quarantinedCopies(hash)).toEqual([]);
        const first = (await s.quarantine(hash))!;
        expect(await s.commit('q4', hash)).toBe('stored');
        const second = (await s.quarantine(hash))!;
        const elsewhere = (await s.quarantine(other))!;
        const ids = (copies: readonly { contentHash: string; id: string }[]) => copies.map((c) => c.id).sort();
        expect(ids(await s.quarantinedCopies(hash))).toEqual([first.id, second.id].sort());
        expect(await s.quarantinedCopies(other)).toEqual([elsewhere]);
        expect(await s.quarantinedCopies('e'.repeat(64))).toEqual([]);
        for (const c of await s.quarantinedCopies(hash)) await s.unquarantine(c);
        expect(await s.quarantinedCopies(hash)).toEqual([]);
        expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
        expect(await s.quarantinedCopies(other)).toEqual([elsewhere]);
      }));

    it('a reader putting a copy back while a sweep settles the same copy loses nothing: two put-backs, or a put-back and a drop, at once', () =>
      using(setup, async (s) => {
        const bytes = pattern(4000);
        const hash = await store(s, 'q6', bytes);
        await s.discard('q6');
        for (let round = 0; round < 4; round++) {
          // A sweep that found a row puts the copy back, as the reader does: the blob is whole at its address.
          const aside = (await s.quarantine(hash))!;
          const [found] = await Promise.all([s.quarantinedCopies(hash), s.unquarantine(aside), s.unquarantine(aside)]);
          expect(found.every((c) => c.id === aside.id)).toBe(true);
          expect(digest(await readAll(await s.read(hash)))).toBe(digest(bytes));
          expect(await s.quarantinedCopies(hash)).toEqual([]);
        }
        for (let round = 0; round < 4; round++) {
          // A sweep that found no row drops the copy as a reader puts it back: put back whole or gone, never half, never aside.
          const aside = (await s.quarantine(hash))!;
          await Promise.all(
            round % 2 === 0
              ? [s.unquarantine(aside), s.dropQuarantined(aside)]
              : [s.dropQuarantined(aside), s.unquarantine(aside)],
          );
          const back = await readAll(await s.read(hash));
          if (back !== null) expect(digest(back)).toBe(digest(bytes));
          expect(await s.stat(hash)).toEqual(back === null ? null : { size: bytes.length });
          expect(await s.quarantinedCopies(hash)).toEqual([]);
          if (back === null) {
            expect(await s.stage('q7', chunks(bytes), bytes.length)).toMatchObject({ sha256: hash });
            expect(await s.commit('q7', hash)).toBe('stored');
            await s.discard('q7');
          }
        }
      }));
  });
}
