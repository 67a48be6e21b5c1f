import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../encoding/bytes.js';
import { linkIdHash } from '../links/link-id.js';
import {
  FakeClock,
  MemoryBlobStore,
  MemoryLinkStore,
  MemoryQuotaStore,
  storedLink,
  testLinkId,
} from '../testing/index.js';
import { BlobReadService } from './service.js';

async function setup() {
  const catalog = new MemoryQuotaStore();
  const blobs = new MemoryBlobStore();
  const links = new MemoryLinkStore();
  const clock = new FakeClock();
  const bytes = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
  const hash = sha256Hex(bytes);
  catalog.assets.set('asset-1', {
    id: 'asset-1',
    ownerId: 'a',
    uploaderId: 'a',
    state: 'live',
    createdAt: 0,
    trashedAt: null,
    dropExpiresAt: null,
    blobs: [{ kind: 'original', contentHash: hash, size: 8 }],
  });
  blobs.blobs.set(hash, bytes);
  return {
    catalog,
    blobs,
    links,
    clock,
    hash,
    bytes,
    service: new BlobReadService({ catalog, blobs, links, ledger: catalog, clock }),
  };
}

async function all(s: AsyncIterable<Uint8Array>): Promise<number[]> {
  const out: number[] = [];
  for await (const c of s) out.push(...c);
  return out;
}

describe('BlobReadService', () => {
  it('the owner reads, by range too; another account and a malformed hash get the same 404', async () => {
    const t = await setup();
    const r = await t.service.forAccount({ accountId: 'a' }, t.hash);
    expect(r.ok && r.value.size).toBe(8);
    if (!r.ok) return;
    expect(await all(await r.value.open())).toEqual([...t.bytes]);
    expect(await all(await r.value.open({ start: 2, end: 4 }))).toEqual([3, 4, 5]);
    expect(r.value.presign).toBeNull();
    expect(await t.service.forAccount({ accountId: 'b' }, t.hash)).toMatchObject({
      ok: false,
      code: 'error.not_found',
    });
    expect(await t.service.forAccount({ accountId: 'a' }, t.hash.toUpperCase())).toMatchObject({
      ok: false,
      code: 'error.not_found',
    });
    expect(await t.service.forAccount({ accountId: 'a', guestUploadId: 'u' }, t.hash)).toMatchObject({
      ok: false,
      code: 'error.not_found',
    });
  });

  it('a referenced blob missing from the store is a fault, never an empty answer; a swept one is 404', async () => {
    const t = await setup();
    t.blobs.blobs.delete(t.hash);
    await expect(t.service.forAccount({ accountId: 'a' }, t.hash)).rejects.toMatchObject({ code: 'error.internal' });
    t.catalog.assets.delete('asset-1');
    expect(await t.service.forAccount({ accountId: 'a' }, t.hash)).toMatchObject({
      ok: false,
      code: 'error.not_found',
    });
  });

  it('a blob at its address costs what it did: no quarantine lookup, no ledger read; only a miss asks them', async () => {
    const t = await setup();
    const asked: string[] = [];
    t.blobs.quarantinedCopies = async (h) => {
      asked.push(`quarantinedCopies ${h}`);
      return [];
    };
    t.catalog.findBlob = async (h) => {
      asked.push(`findBlob ${h}`);
      return null;
    };
    const r = await t.service.forAccount({ accountId: 'a' }, t.hash);
    if (!r.ok) throw new Error(r.code);
    expect(await all(await r.value.open({ start: 0, end: 1 }))).toEqual([1, 2]);
    expect(asked).toEqual([]);
    t.blobs.blobs.delete(t.hash);
    await expect(t.service.forAccount({ accountId: 'a' }, t.hash)).rejects.toMatchObject({ code: 'error.internal' });
    // No copy aside: the ledger is not even asked.
    expect(asked).toEqual([`quarantinedCopies ${t.hash}`]);
  });

  it('a store that fails is a store fault (fail closed), not a 404', async () => {
    const t = await setup();
    t.blobs.stat = async () => {
      throw new Error('disk gone');
    };
    await expect(t.service.forAccount({ accountId: 'a' }, t.hash)).rejects.toMatchObject({
      code: 'error.store.unavailable',
    });
  });

  it('a share link reads what it covers; a revoked one nothing', async () => {
    const t = await setup();
    const [live, revoked] = [testLinkId(1), testLinkId(2)];
    const fields = {
      ownerId: 'a',
      kind: 'share' as const,
      albumId: null,
      assetIds: ['asset-1'],
      wrappedKey: 'k',
      sealKey: null,
      maxBytes: null,
      acceptedBytes: 0,
      createdAt: 0,
      expiresAt: null,
      revokedAt: null,
    };
    await t.links.createLink(await storedLink(live, fields));
    expect((await t.service.forLink(live, t.hash)).ok).toBe(true);
    expect(await t.service.forLink(testLinkId(3), t.hash)).toMatchObject({ ok: false, code: 'error.not_found' });
    await t.links.createLink(await storedLink(revoked, { ...fields, revokedAt: 1 }));
    expect(await t.service.forLink(revoked, t.hash)).toMatchObject({ ok: false, code: 'error.not_found' });
    // Only the id reaches the link: the key it is stored under (all a copy of the database shows) does not.
    expect(await t.service.forLink(linkIdHash(live)!, t.hash)).toMatchObject({ ok: false, code: 'error.not_found' });
  });
});
