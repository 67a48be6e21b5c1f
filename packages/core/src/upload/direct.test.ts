import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../encoding/bytes.js';
import { admitAllWrites } from '../ports/write-guard.js';
import type { QuotaPolicy } from '../quota/machine.js';
import { QuotaService } from '../quota/service.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryDirectBlobStore } from '../testing/memory-blob-store.js';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { SeededRandom } from '../testing/seeded-random.js';
import { DEFAULT_DIRECT_PUT_TTL_S, decideArrival, decideStored, directPutGrant } from './direct.js';
import { UploadService } from './service.js';

const ALICE = '0190c000-0000-7000-8000-00000000000a';
const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: 1_000_000 },
  graceMs: 1000,
  federatedShare: 0.25,
  maxOpenUploads: 1000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};
const HASH = 'a'.repeat(64);

describe('directPutGrant', () => {
  const pending = { state: 'Pending' as const, expiresAt: 100_000, declaredSize: 42, contentHash: HASH };
  it("exactly the declared size, the announced hash, and at most the session's remaining lifetime", () => {
    expect(directPutGrant(pending, 40_500)).toEqual({ size: 42, sha256: HASH, ttlS: 59 });
    expect(directPutGrant({ ...pending, contentHash: null }, 0)).toEqual({ size: 42, sha256: null, ttlS: 100 });
    expect(directPutGrant({ ...pending, expiresAt: 10 * 86_400_000 }, 0)?.ttlS).toBe(DEFAULT_DIRECT_PUT_TTL_S);
  });
  it("a URL lives at most 900 s by default, at most the deployment's bound, and never past its session", () => {
    expect(DEFAULT_DIRECT_PUT_TTL_S).toBe(900);
    const long = { ...pending, expiresAt: 86_400_000 };
    expect(directPutGrant(long, 0)?.ttlS).toBe(900);
    expect(directPutGrant(long, 0, 60)?.ttlS).toBe(60);
    expect(directPutGrant(long, 86_400_000 - 30_000, 600)?.ttlS).toBe(30);
  });
  it('nothing for a session no longer waiting for bytes, or with under a second left', () => {
    expect(directPutGrant(pending, 99_500)).toBeNull();
    expect(directPutGrant(pending, 100_000)).toBeNull();
    for (const state of ['Uploading', 'WaitingForProcessing', 'Completed', 'Merged', 'Cancelled', 'Expired'] as const)
      expect(directPutGrant({ ...pending, state }, 0)).toBeNull();
  });
});

describe('decideStored', () => {
  it('the blob at the address must be exactly the size received (its hash is what commit checked), or gone to a sweep', () => {
    expect(decideStored({ size: 42 }, 42)).toBe('held');
    expect(decideStored({ size: 0 }, 42)).toBe('other');
    // Nothing there: a sweep took it between the copy and the read; the hand-over commits it again.
    expect(decideStored(null, 42)).toBe('taken');
  });
});

describe('decideArrival', () => {
  const s = { declaredSize: 10, contentHash: null };
  it('accepts what fits and hashes as announced and as claimed', () => {
    expect(decideArrival(s, { size: 10, sha256: HASH })).toEqual({ ok: true, value: { size: 10, sha256: HASH } });
    expect(decideArrival({ ...s, contentHash: HASH }, { size: 3, sha256: HASH }, HASH).ok).toBe(true);
  });
  it('refuses nothing, too much, and bytes of another hash', () => {
    expect(decideArrival(s, 'nothing')).toMatchObject({ ok: false, code: 'error.conflict' });
    expect(decideArrival(s, 'too_large')).toMatchObject({ ok: false, code: 'error.upload.too_large' });
    expect(decideArrival(s, { size: 11, sha256: HASH })).toMatchObject({ ok: false, code: 'error.upload.too_large' });
    expect(decideArrival({ ...s, contentHash: HASH }, { size: 3, sha256: 'b'.repeat(64) })).toMatchObject({
      ok: false,
      code: 'error.conflict',
    });
    expect(decideArrival(s, { size: 3, sha256: 'b'.repeat(64) }, HASH)).toMatchObject({
      ok: false,
      code: 'error.conflict',
    });
  });
});

async function setup() {
  const ports = createMemoryPorts();
  const clock = new FakeClock();
  const random = new SeededRandom(11);
  const blobs = new MemoryDirectBlobStore();
  const quota = new QuotaService({ ledger: ports.quota, blobs, clock, random, policy: POLICY });
  const uploads = new UploadService({
    sessions: ports.quota,
    assets: ports.quota,
    blobs,
    quota,
    writeGuard: admitAllWrites,
    clock,
    random,
    ttlMs: 60_000,
    dropTtlMs: 60_000,
    federationPeers: [],
    directPutTtlS: 20,
  });
  const open = async (declaredSize: number, contentHash: string | null) => {
    const u = await uploads.create(
      { accountId: ALICE },
      {
        declaredSize,
        kind: 'original',
        contentHash,
        albumId: null,
        intentId: null,
        deviceId: 'phone',
        protocolVersion: '2026-06-01',
      },
    );
    if (!u.ok) throw new Error(u.code);
    return u.value;
  };
  const used = async () => (await quota.status(ALICE)).used;
  return { blobs, uploads, open, used, clock };
}

describe('UploadService with a store a client sends to directly', () => {
  it("create answers a URL within core's grant; finalize checks what arrived, then charges it", async () => {
    const t = await setup();
    const data = new Uint8Array(20).fill(7);
    const u = await t.open(20, sha256Hex(data));
    expect(u.directPut).toMatchObject({
      url: `memory:staging/${u.uploadId}`,
      headers: { 'content-length': '20', 'x-checksum-sha256': sha256Hex(data) },
    });
    // The deployment's bound (20 s here), well inside the session's 60 s.
    expect(u.directPut?.expiresAt).toBe(u.expiresAt - 40_000);
    expect(t.blobs.grants.get(u.uploadId)).toEqual({ size: 20, sha256: sha256Hex(data), ttlS: 20 });
    const before = await t.used();
    expect(t.blobs.send(u.uploadId, data)).toBe(true);
    const done = await t.uploads.finalize({ accountId: ALICE }, u.uploadId, {
      protocolVersion: '2026-06-01',
      contentHash: sha256Hex(data),
      manifest: null,
    });
    expect(done).toMatchObject({ ok: true, value: { state: 'Completed' } });
    expect(t.blobs.blobs.get(sha256Hex(data))).toEqual(data);
    // The reservation (20) became a charge of the 20 bytes that arrived.
    expect(await t.used()).toBe(before);
    // Idempotent, like the proxied path.
    expect(
      await t.uploads.finalize({ accountId: ALICE }, u.uploadId, {
        protocolVersion: '2026-06-01',
        contentHash: sha256Hex(data),
        manifest: null,
      }),
    ).toMatchObject({ ok: true, value: { state: 'Completed' } });
  });

  it('nothing arrived: 409, and the session still waits for bytes', async () => {
    const t = await setup();
    const u = await t.open(8, null);
    expect(
      await t.uploads.finalize({ accountId: ALICE }, u.uploadId, {
        protocolVersion: '2026-06-01',
        contentHash: HASH,
        manifest: null,
      }),
    ).toMatchObject({ ok: false, code: 'error.conflict' });
    expect(await t.uploads.get({ accountId: ALICE }, u.uploadId)).toMatchObject({
      ok: true,
      value: { state: 'Pending' },
    });
  });

  it('bytes of another hash, or more than declared (a store that checks nothing): refused, nothing kept, nothing charged', async () => {
    const t = await setup();
    const before = await t.used();
    const wrong = await t.open(8, null);
    t.blobs.send(wrong.uploadId, new Uint8Array(8).fill(1), false);
    expect(
      await t.uploads.finalize({ accountId: ALICE }, wrong.uploadId, {
        protocolVersion: '2026-06-01',
        contentHash: sha256Hex(new Uint8Array(8).fill(2)),
        manifest: null,
      }),
    ).toMatchObject({ ok: false, code: 'error.conflict' });
    const large = await t.open(8, null);
    t.blobs.send(large.uploadId, new Uint8Array(9), false);
    expect(
      await t.uploads.finalize({ accountId: ALICE }, large.uploadId, {
        protocolVersion: '2026-06-01',
        contentHash: sha256Hex(new Uint8Array(9)),
        manifest: null,
      }),
    ).toMatchObject({ ok: false, code: 'error.upload.too_large' });
    const announced = await t.open(8, sha256Hex(new Uint8Array(8).fill(3)));
    t.blobs.send(announced.uploadId, new Uint8Array(8).fill(4), false);
    expect(
      await t.uploads.finalize({ accountId: ALICE }, announced.uploadId, {
        protocolVersion: '2026-06-01',
        contentHash: sha256Hex(new Uint8Array(8).fill(3)),
        manifest: null,
      }),
    ).toMatchObject({ ok: false, code: 'error.conflict' });
    expect(t.blobs.staged.size).toBe(0);
    expect(t.blobs.blobs.size).toBe(0);
    // Only the three reservations (8 each): no charge for any of those bytes.
    expect(await t.used()).toBe(before + 24);
    for (const u of [wrong, large, announced])
      expect(await t.uploads.get({ accountId: ALICE }, u.uploadId)).toMatchObject({
        ok: true,
        value: { state: 'Pending' },
      });
  });

  it('the proxied PUT still works on such a store', async () => {
    const t = await setup();
    const data = new Uint8Array(5).fill(9);
    const u = await t.open(5, null);
    async function* body() {
      yield data;
    }
    expect((await t.uploads.put({ accountId: ALICE }, u.uploadId, body(), { protocolVersion: '2026-06-01' })).ok).toBe(
      true,
    );
    expect(
      await t.uploads.finalize({ accountId: ALICE }, u.uploadId, {
        protocolVersion: '2026-06-01',
        contentHash: sha256Hex(data),
        manifest: null,
      }),
    ).toMatchObject({ ok: true, value: { state: 'Completed' } });
  });

  it('a fresh URL while the session waits for bytes, within the bound and the session; none once it is over, and none for another account', async () => {
    const t = await setup();
    const u = await t.open(8, null);
    t.clock.advance(50_000);
    const renewed = await t.uploads.directPut({ accountId: ALICE }, u.uploadId);
    // 10 s of the session are left: the URL lives no longer, whatever the bound.
    expect(renewed).toMatchObject({ ok: true, value: { url: `memory:staging/${u.uploadId}`, expiresAt: u.expiresAt } });
    expect(t.blobs.grants.get(u.uploadId)).toEqual({ size: 8, sha256: null, ttlS: 10 });
    expect(await t.uploads.directPut({ accountId: '0190c000-0000-7000-8000-00000000000b' }, u.uploadId)).toMatchObject({
      ok: false,
      code: 'error.not_found',
    });
    expect((await t.uploads.cancel({ accountId: ALICE }, u.uploadId)).ok).toBe(true);
    expect(await t.uploads.directPut({ accountId: ALICE }, u.uploadId)).toMatchObject({
      ok: false,
      code: 'error.conflict',
    });
    const lapsed = await t.open(8, null);
    t.clock.advance(60_000);
    expect(await t.uploads.directPut({ accountId: ALICE }, lapsed.uploadId)).toMatchObject({
      ok: false,
      code: 'error.conflict',
    });
  });

  it('a store that leaves other bytes at the address than it was told to commit: refused, nothing charged', async () => {
    const t = await setup();
    const data = new Uint8Array(16).fill(5);
    const u = await t.open(16, null);
    t.blobs.send(u.uploadId, data);
    // A store that ignores its own checks: the address ends up holding other bytes.
    const commit = t.blobs.commit.bind(t.blobs);
    t.blobs.commit = async (id, hash) => {
      const r = await commit(id, hash);
      t.blobs.blobs.set(hash, new Uint8Array(0));
      return r;
    };
    const before = await t.used();
    const done = await t.uploads.finalize({ accountId: ALICE }, u.uploadId, {
      protocolVersion: '2026-06-01',
      contentHash: sha256Hex(data),
      manifest: null,
    });
    expect(done).toMatchObject({ ok: false, code: 'error.conflict' });
    expect(await t.used()).toBe(before);
    expect(await t.uploads.get({ accountId: ALICE }, u.uploadId)).toMatchObject({
      ok: true,
      value: { state: 'WaitingForProcessing' },
    });
  });

  it('finalize reads nothing back whole: the commit checked the hash, the address is looked at for its size', async () => {
    const t = await setup();
    const data = new Uint8Array(20).fill(8);
    const u = await t.open(20, null);
    t.blobs.send(u.uploadId, data);
    const digests: string[] = [];
    const digest = t.blobs.digest.bind(t.blobs);
    t.blobs.digest = async (hash) => {
      digests.push(hash);
      return digest(hash);
    };
    expect(
      await t.uploads.finalize({ accountId: ALICE }, u.uploadId, {
        protocolVersion: '2026-06-01',
        contentHash: sha256Hex(data),
        manifest: null,
      }),
    ).toMatchObject({ ok: true, value: { state: 'Completed' } });
    expect(digests).toEqual([]);
    expect(t.blobs.blobs.get(sha256Hex(data))).toEqual(data);
  });

  it('a blob a sweep moved aside between the copy and the read-back: committed again from staging, charged once, and at its address', async () => {
    const t = await setup();
    const data = new Uint8Array(12).fill(6);
    const u = await t.open(12, null);
    t.blobs.send(u.uploadId, data);
    const commit = t.blobs.commit.bind(t.blobs);
    let swept = false;
    t.blobs.commit = async (id, hash) => {
      const r = await commit(id, hash);
      if (!swept) {
        swept = true;
        await t.blobs.quarantine(hash);
      }
      return r;
    };
    const before = await t.used();
    expect(
      await t.uploads.finalize({ accountId: ALICE }, u.uploadId, {
        protocolVersion: '2026-06-01',
        contentHash: sha256Hex(data),
        manifest: null,
      }),
    ).toMatchObject({ ok: true, value: { state: 'Completed' } });
    expect(t.blobs.blobs.get(sha256Hex(data))).toEqual(data);
    expect(await t.used()).toBe(before);
  });
});
