import { describe, expect, it } from 'vitest';
import { sha256Hex, type BlobStore } from '@strongroom/core';

/** Makes a fresh, empty blob store for one test; `cleanup` releases it. */
export type BlobSetup = () => Promise<{ store: BlobStore; cleanup?: () => Promise<void> | void }>;

async function* chunks(...parts: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield p;
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
 * Run by the filesystem store (adapters-node) and the in-memory one.
 */
export function describeBlobStoreContract(name: string, setup: BlobSetup): void {
  describe(`BlobStore contract: ${name}`, () => {
    it('stores staged bytes under their SHA-256 only, once', () =>
      using(setup, async (s) => {
        const bytes = new Uint8Array([1, 2, 3, 4, 5]);
        const hash = sha256Hex(bytes);
        expect(await s.stage('u1', chunks(bytes.subarray(0, 2), bytes.subarray(2)), 5)).toEqual({ size: 5, sha256: hash });
        expect(await s.commit('u1', 'f'.repeat(64))).toBe('hash_mismatch');
        expect(await s.has('f'.repeat(64))).toBe(false);
        expect(await s.commit('u1', hash)).toBe('stored');
        expect(await s.has(hash)).toBe(true);
        expect(await s.read(hash)).toEqual(bytes);
        expect(await s.commit('u1', hash)).toBe('missing');
        await s.remove(hash);
        expect(await s.has(hash)).toBe(false);
        expect(await s.read(hash)).toBeNull();
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
        expect(await s.read(hash)).toEqual(bytes);
        await s.remove(hash);
        expect(await s.has(hash)).toBe(false);
        await s.remove(hash);
      }));
  });
}
