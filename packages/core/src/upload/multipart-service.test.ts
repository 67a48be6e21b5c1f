import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../encoding/bytes.js';
import { admitAllWrites } from '../ports/write-guard.js';
import type { QuotaPolicy } from '../quota/machine.js';
import { QuotaService } from '../quota/service.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryDirectBlobStore } from '../testing/memory-blob-store.js';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { SeededRandom } from '../testing/seeded-random.js';
import { UploadService } from './service.js';

const ALICE = { accountId: '0190c000-0000-7000-8000-00000000000a' };
const MALLORY = { accountId: '0190c000-0000-7000-8000-00000000000b' };
const MiB = 1024 * 1024;
const VERSION = '2026-06-01';
const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: 100 * MiB },
  graceMs: 1000,
  federatedShare: 0.25,
  maxOpenUploads: 1000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};

/** Three parts of 5 MiB, 5 MiB and 4 KiB (threshold 5 MiB, S3's smallest part). */
const DATA = Uint8Array.from({ length: 10 * MiB + 4096 }, (_, i) => (i * 7 + (i >> 13)) & 0xff);
const part = (n: number) => DATA.subarray((n - 1) * 5 * MiB, Math.min(n * 5 * MiB, DATA.length));
const HASH = sha256Hex(DATA);

function setup() {
  const ports = createMemoryPorts();
  const clock = new FakeClock();
  const random = new SeededRandom(5);
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
    partBytes: 5 * MiB,
  });
  const open = async (declaredSize = DATA.length, contentHash: string | null = HASH) => {
    const u = await uploads.create(ALICE, {
      declaredSize,
      kind: 'original',
      contentHash,
      albumId: null,
      intentId: null,
      deviceId: 'phone',
      protocolVersion: VERSION,
    });
    if (!u.ok) throw new Error(u.code);
    return u.value;
  };
  const finalize = (id: string, contentHash = HASH) =>
    uploads.finalize(ALICE, id, { protocolVersion: VERSION, contentHash, manifest: null });
  const sign = async (id: string, numbers: number[]) => {
    const r = await uploads.partUrls(
      ALICE,
      id,
      numbers.map((n) => ({ partNumber: n, sha256: sha256Hex(part(n)) })),
    );
    if (!r.ok) throw new Error(r.code);
    return r.value;
  };
  const quotaNow = () => quota.status(ALICE.accountId);
  return { blobs, uploads, clock, open, finalize, sign, quotaNow };
}

// Megabytes hashed in memory several times per test: more than the default 5 s on a loaded machine.
describe('UploadService: direct uploads in parts', { timeout: 60_000 }, () => {
  it('above the threshold, creation offers parts instead of one PUT; a resumed upload sends only the missing part; finalize then charges once', async () => {
    const t = setup();
    const u = await t.open();
    expect(u.directPut).toBeNull();
    expect(u.multipart).toEqual({ partSize: 5 * MiB, partCount: 3 });
    // At the threshold itself, one PUT as before.
    const small = await t.open(5 * MiB, null);
    expect(small.multipart).toBeNull();
    expect(small.directPut).not.toBeNull();

    const urls = await t.sign(u.uploadId, [1, 2, 3]);
    expect(urls.map((p) => [p.partNumber, p.headers['content-length']])).toEqual([
      [1, String(5 * MiB)],
      [2, String(5 * MiB)],
      [3, '4096'],
    ]);
    expect(urls[0]?.expiresAt).toBe(t.clock.now() + 20_000);
    expect(t.blobs.sendPart(u.uploadId, 1, part(1))).toBe(true);
    expect(t.blobs.sendPart(u.uploadId, 3, part(3))).toBe(true);
    // A part of another length, or other bytes than announced, is refused by the signature.
    expect(t.blobs.sendPart(u.uploadId, 2, part(2).subarray(1))).toBe(false);
    expect(t.blobs.sendPart(u.uploadId, 2, part(1))).toBe(false);

    const before = await t.quotaNow();
    expect(before.reserved).toBe(DATA.length + 5 * MiB);
    expect(await t.uploads.parts(ALICE, u.uploadId)).toEqual({
      ok: true,
      value: {
        partSize: 5 * MiB,
        partCount: 3,
        stored: [
          { partNumber: 1, size: 5 * MiB },
          { partNumber: 3, size: 4096 },
        ],
        missing: [2],
        expiresAt: u.expiresAt,
      },
    });
    // Finalize before every part arrived: a conflict naming the part, nothing charged, still resumable.
    const early = await t.finalize(u.uploadId);
    expect(early).toMatchObject({ ok: false, code: 'error.conflict', data: { missing_parts: [2] } });
    expect(await t.quotaNow()).toEqual(before);
    expect((await t.uploads.get(ALICE, u.uploadId)).ok && (await t.uploads.get(ALICE, u.uploadId))).toMatchObject({
      value: { state: 'Pending' },
    });
    expect(t.blobs.staged.has(u.uploadId)).toBe(false);

    expect(t.blobs.sendPart(u.uploadId, 2, part(2))).toBe(true);
    const done = await t.finalize(u.uploadId);
    expect(done).toMatchObject({ ok: true, value: { state: 'Completed', declaredSize: DATA.length } });
    expect(sha256Hex(t.blobs.blobs.get(HASH) ?? new Uint8Array())).toBe(HASH);
    const after = await t.quotaNow();
    expect(after.used).toBe(before.used);
    expect(after.reserved).toBe(5 * MiB);
    // Nothing of the upload is left open, and its parts can no longer be asked for.
    expect(t.blobs.uploads.has(u.uploadId)).toBe(false);
    expect(await t.uploads.partUrls(ALICE, u.uploadId, [{ partNumber: 1, sha256: HASH }])).toMatchObject({
      ok: false,
      code: 'error.conflict',
    });
    expect(await t.finalize(u.uploadId)).toMatchObject({ ok: true, value: { state: 'Completed' } });
  });

  it('parts whose whole does not hash to content_hash: 409, nothing charged, nothing kept', async () => {
    const t = setup();
    const u = await t.open(DATA.length, null);
    await t.sign(u.uploadId, [1, 2, 3]);
    for (const n of [1, 2, 3]) t.blobs.sendPart(u.uploadId, n, part(n));
    const before = await t.quotaNow();
    const wrong = await t.finalize(u.uploadId, 'c'.repeat(64));
    expect(wrong).toMatchObject({ ok: false, code: 'error.conflict' });
    expect(await t.quotaNow()).toEqual(before);
    expect(t.blobs.blobs.size).toBe(0);
    expect(t.blobs.staged.has(u.uploadId)).toBe(false);
  });

  it('only whoever may send the bytes gets part URLs; one PUT is refused for an upload that goes in parts', async () => {
    const t = setup();
    const u = await t.open();
    expect(await t.uploads.partUrls(MALLORY, u.uploadId, [{ partNumber: 1, sha256: HASH }])).toMatchObject({
      ok: false,
      code: 'error.not_found',
    });
    expect(await t.uploads.parts(MALLORY, u.uploadId)).toMatchObject({ ok: false, code: 'error.not_found' });
    expect(await t.uploads.directPut(ALICE, u.uploadId)).toMatchObject({ ok: false, code: 'error.conflict' });
    const small = await t.open(100, null);
    expect(await t.uploads.parts(ALICE, small.uploadId)).toMatchObject({ ok: false, code: 'error.conflict' });
  });

  it('cancel aborts the parts; the sweep aborts those of a session that expired and keeps an open one', async () => {
    const t = setup();
    const cancelled = await t.open();
    await t.sign(cancelled.uploadId, [1]);
    t.blobs.sendPart(cancelled.uploadId, 1, part(1));
    expect((await t.uploads.cancel(ALICE, cancelled.uploadId)).ok).toBe(true);
    expect(t.blobs.uploads.has(cancelled.uploadId)).toBe(false);

    const lapsed = await t.open();
    await t.sign(lapsed.uploadId, [1]);
    t.clock.advance(30_000);
    const open = await t.open();
    await t.sign(open.uploadId, [2]);
    t.clock.advance(31_000);
    expect(await t.uploads.sweepStaging()).toBe(1);
    expect([...t.blobs.uploads.keys()]).toEqual([open.uploadId]);
    // An expired session takes no parts and finalizes nothing.
    expect(await t.uploads.partUrls(ALICE, lapsed.uploadId, [{ partNumber: 1, sha256: HASH }])).toMatchObject({
      ok: false,
      code: 'error.conflict',
    });
  });
});
