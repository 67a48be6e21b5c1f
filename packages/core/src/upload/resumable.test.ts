import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../encoding/bytes.js';
import { admitAllWrites } from '../ports/write-guard.js';
import type { QuotaPolicy } from '../quota/machine.js';
import { QuotaService } from '../quota/service.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryBlobStore } from '../testing/memory-blob-store.js';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { SeededRandom } from '../testing/seeded-random.js';
import { decideAppend, MAX_RUNS, ResumableUploads, segmentOwner, segmentStagingId, uploadOffset } from './resumable.js';
import { UploadService } from './service.js';

const ALICE = { accountId: '0190c000-0000-7000-8000-00000000000a' };
const V = '2026-06-01';
const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: 1_000_000 },
  graceMs: 1000,
  federatedShare: 0.25,
  maxOpenUploads: 1000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};

async function* once(bytes: Uint8Array) {
  yield bytes;
}

/**
 * A store that fails the next staging of `failing` (a process that stops while it assembles the
 * runs), and, while `discardFails` is set, every discard of a run's copy.
 */
class FailingOnce extends MemoryBlobStore {
  failing: string | null = null;
  discardFails = false;
  override discard(stagingId: string) {
    if (this.discardFails && segmentOwner(stagingId) !== null) return Promise.reject(new Error('the store is away'));
    return super.discard(stagingId);
  }
  override stage(stagingId: string, body: AsyncIterable<Uint8Array>, maxBytes: number) {
    if (stagingId === this.failing) {
      this.failing = null;
      return Promise.reject(new Error('the disk went away'));
    }
    return super.stage(stagingId, body, maxBytes);
  }
}

function world() {
  const ports = createMemoryPorts();
  const clock = new FakeClock();
  const random = new SeededRandom(7);
  const blobs = new FailingOnce();
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
  });
  const resumable = new ResumableUploads({
    sessions: ports.quota,
    segments: ports.segments,
    blobs,
    writeGuard: admitAllWrites,
    clock,
    random,
  });
  const open = async (size: number, contentHash: string | null = null) => {
    const u = await uploads.create(ALICE, {
      declaredSize: size,
      kind: 'original',
      contentHash,
      albumId: null,
      intentId: null,
      deviceId: 'phone',
      protocolVersion: V,
    });
    if (!u.ok) throw new Error(u.code);
    return u.value.uploadId;
  };
  const append = (id: string, offset: number, bytes: Uint8Array) =>
    resumable.append(ALICE, id, { offset, body: once(bytes), sha256: null, protocolVersion: V });
  const runs = (id: string) => [...blobs.staged.keys()].filter((k) => segmentOwner(k) === id);
  return { clock, blobs, uploads, resumable, open, append, runs, ports };
}

describe('the offset of a resumable upload', () => {
  it('is the contiguous end of its runs from 0, whatever order they are listed in', () => {
    expect(uploadOffset([])).toBe(0);
    expect(
      uploadOffset([
        { start: 5, length: 5 },
        { start: 0, length: 5 },
      ]),
    ).toBe(10);
    expect(
      uploadOffset([
        { start: 0, length: 5 },
        { start: 6, length: 5 },
      ]),
    ).toBe(5);
  });

  it('names the session a run belongs to by its staging id, and nothing else', () => {
    const id = '0190c000-0000-7000-8000-0000000000b1';
    expect(segmentOwner(segmentStagingId(id, 42, new Uint8Array([1, 2])))).toBe(id);
    expect(segmentOwner(id)).toBeNull();
    expect(segmentOwner('meta-0190c000')).toBeNull();
  });
});

describe('the runs a resumable upload stages', () => {
  it("become the session's bytes at the declared size, and their own copies go", async () => {
    const w = world();
    const data = new Uint8Array(10).map((_, i) => i);
    const id = await w.open(10, sha256Hex(data));
    expect(await w.append(id, 0, data.subarray(0, 4))).toMatchObject({ ok: true, value: { offset: 4 } });
    expect(w.runs(id)).toHaveLength(1);
    expect(await w.append(id, 4, data.subarray(4))).toMatchObject({ ok: true, value: { offset: 10 } });
    expect(w.runs(id)).toEqual([]);
    expect(sha256Hex(w.blobs.staged.get(id)!)).toBe(sha256Hex(data));
    expect(
      await w.uploads.finalize(ALICE, id, { protocolVersion: V, contentHash: sha256Hex(data), manifest: null }),
    ).toMatchObject({ ok: true, value: { state: 'Completed' } });
  });

  it('whose copies the store fails to drop once assembled still answer the full offset; the staging sweep drops them later', async () => {
    const w = world();
    const data = new Uint8Array(10).map((_, i) => 10 - i);
    const id = await w.open(10, sha256Hex(data));
    expect((await w.append(id, 0, data.subarray(0, 4))).ok).toBe(true);
    w.blobs.discardFails = true;
    expect(await w.append(id, 4, data.subarray(4))).toMatchObject({ ok: true, value: { offset: 10 } });
    expect(w.runs(id)).toHaveLength(2);
    expect(
      await w.uploads.finalize(ALICE, id, { protocolVersion: V, contentHash: sha256Hex(data), manifest: null }),
    ).toMatchObject({ ok: true, value: { state: 'Completed' } });
    w.blobs.discardFails = false;
    expect(await w.uploads.sweepStaging()).toBe(2);
    expect(w.runs(id)).toEqual([]);
  });

  it('that cannot hash to the announced content_hash are refused at the end, and nothing is staged for finalize', async () => {
    const w = world();
    const id = await w.open(4, 'ab'.repeat(32));
    const got = await w.append(id, 0, new Uint8Array(4));
    expect(got).toMatchObject({ ok: false, code: 'error.conflict' });
    expect(w.blobs.staged.has(id)).toBe(false);
  });

  it('are swept once their session takes no more runs (cancelled, expired), never while it does', async () => {
    const w = world();
    const open = await w.open(10);
    const cancelled = await w.open(10);
    const lapsing = await w.open(10);
    for (const id of [open, cancelled, lapsing]) expect((await w.append(id, 0, new Uint8Array(3))).ok).toBe(true);
    expect((await w.uploads.cancel(ALICE, cancelled)).ok).toBe(true);
    expect(await w.uploads.sweepStaging()).toBe(1);
    expect([w.runs(open).length, w.runs(cancelled).length, w.runs(lapsing).length]).toEqual([1, 0, 1]);
    w.clock.advance(60_000);
    expect(await w.uploads.sweepStaging()).toBe(2);
    expect([w.runs(open).length, w.runs(lapsing).length]).toEqual([0, 0]);
  });
});

describe('what a resumable upload refuses or recovers', () => {
  it('holds at most MAX_RUNS runs: a client cannot leave a million one-byte runs behind', () => {
    const session = {
      id: 'x',
      uploaderId: 'a',
      payerId: 'a',
      kind: 'original' as const,
      declaredSize: MAX_RUNS + 10,
      contentHash: null,
      sourcePeer: null,
      albumId: null,
      intentId: null,
      dropLinkIdHash: null,
      state: 'Uploading' as const,
      receivedSize: null,
      receivedHash: null,
      assetId: null,
      createdAt: 0,
      expiresAt: 10,
    };
    const runs = Array.from({ length: MAX_RUNS }, (_, i) => ({
      uploadId: 'x',
      start: i,
      length: 1,
      segmentId: `x_${i}_0`,
    }));
    expect(
      decideAppend({ session, segments: runs.slice(0, MAX_RUNS - 1) }, { start: MAX_RUNS - 1, length: 1 }, 0),
    ).toEqual({ offset: MAX_RUNS });
    expect(decideAppend({ session, segments: runs }, { start: MAX_RUNS, length: 10 }, 0)).toBe('too_many');
  });

  it('a process that stopped between recording the last run and assembling them: HEAD assembles, and finalize works', async () => {
    const w = world();
    const data = new Uint8Array(8).fill(9);
    const id = await w.open(8);
    w.blobs.failing = id;
    await expect(w.append(id, 0, data)).rejects.toThrow('the disk went away');
    expect(await w.resumable.offset(ALICE, id)).toMatchObject({ ok: true, value: { offset: 8 } });
    expect(await w.uploads.get(ALICE, id)).toMatchObject({ ok: true, value: { state: 'WaitingForProcessing' } });
    expect(
      await w.uploads.finalize(ALICE, id, { protocolVersion: V, contentHash: sha256Hex(data), manifest: null }),
    ).toMatchObject({ ok: true, value: { state: 'Completed' } });
  });

  it('a run gone before the assembly (the session ended meanwhile) is a conflict, not a fault', async () => {
    const w = world();
    const id = await w.open(8);
    expect((await w.append(id, 0, new Uint8Array(4))).ok).toBe(true);
    for (const run of w.runs(id)) w.blobs.staged.delete(run);
    expect(await w.append(id, 4, new Uint8Array(4))).toMatchObject({ ok: false, code: 'error.conflict' });
    expect(w.blobs.staged.has(id)).toBe(false);
  });
});

describe('a PATCH at the full offset', () => {
  it('with bytes is past the declared size (413, nothing kept); empty, it assembles what is recorded', async () => {
    const w = world();
    const data = new Uint8Array(6).fill(4);
    const id = await w.open(6);
    w.blobs.failing = id;
    await expect(w.append(id, 0, data)).rejects.toThrow('the disk went away');
    expect(await w.append(id, 6, new Uint8Array(1))).toMatchObject({ ok: false, code: 'error.upload.too_large' });
    expect(w.blobs.staged.has(id)).toBe(false);
    expect(await w.append(id, 6, new Uint8Array(0))).toMatchObject({ ok: true, value: { offset: 6 } });
    expect(sha256Hex(w.blobs.staged.get(id)!)).toBe(sha256Hex(data));
  });
});
