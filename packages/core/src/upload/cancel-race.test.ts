import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../encoding/bytes.js';
import { admitAllWrites } from '../ports/write-guard.js';
import type { QuotaPolicy } from '../quota/machine.js';
import { QuotaService } from '../quota/service.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryBlobStore } from '../testing/memory-blob-store.js';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { SeededRandom } from '../testing/seeded-random.js';
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

/** A store whose commit waits, once armed, until the test lets it finish. */
class HeldCommitStore extends MemoryBlobStore {
  armed = false;
  release: (() => void) | null = null;
  override async commit(stagingId: string, contentHash: string) {
    const done = await super.commit(stagingId, contentHash);
    if (this.armed) await new Promise<void>((go) => (this.release = go));
    return done;
  }
}

async function* once(bytes: Uint8Array) {
  yield bytes;
}

/** The memory stores with a held-commit blob store; `service()` is one process's upload service over them. */
function world(seed: number) {
  const ports = createMemoryPorts();
  const clock = new FakeClock();
  const random = new SeededRandom(seed);
  const blobs = new HeldCommitStore();
  const quota = new QuotaService({ ledger: ports.quota, blobs, clock, random, policy: POLICY });
  const service = () =>
    new UploadService({
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
  /** An original of Alice's with `data` received, waiting for its finalize: its id. */
  const received = async (uploads: UploadService, data: Uint8Array): Promise<string> => {
    const u = await uploads.create(
      { accountId: ALICE },
      {
        declaredSize: data.length,
        kind: 'original',
        contentHash: null,
        albumId: null,
        intentId: null,
        deviceId: 'phone',
        protocolVersion: '2026-06-01',
      },
    );
    if (!u.ok) throw new Error(u.code);
    expect(
      (await uploads.put({ accountId: ALICE }, u.value.uploadId, once(data), { protocolVersion: '2026-06-01' })).ok,
    ).toBe(true);
    return u.value.uploadId;
  };
  return { clock, blobs, quota, service, received };
}

describe('a cancel that arrives while a finalize of the same session runs (one process)', () => {
  it('waits for it: the finalize wins, the cancel is 409, and no stored byte is left charged to no one', async () => {
    const { blobs, quota, service, received } = world(3);
    const uploads = service();
    const data = new Uint8Array(32).fill(5);
    const id = await received(uploads, data);

    blobs.armed = true;
    const finalizing = uploads.finalize({ accountId: ALICE }, id, {
      protocolVersion: '2026-06-01',
      contentHash: sha256Hex(data),
      manifest: null,
    });
    for (let i = 0; i < 100 && blobs.release === null; i++) await new Promise((r) => setImmediate(r));
    expect(blobs.blobs.has(sha256Hex(data))).toBe(true); // committed, not yet in the ledger
    const cancelling = uploads.cancel({ accountId: ALICE }, id);
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    blobs.armed = false;
    blobs.release!();

    expect(await finalizing).toMatchObject({ ok: true, value: { state: 'Completed' } });
    expect(await cancelling).toMatchObject({ ok: false, code: 'error.conflict' });
    // Every stored blob is charged to someone: the bytes are Alice's, at their size.
    const report = await quota.report(ALICE);
    expect(report.blobs.map((b) => b.contentHash)).toEqual([...blobs.blobs.keys()]);
    expect((await quota.status(ALICE)).used).toBe(32);
  });
});

describe('sweepStaging: staged bytes no session in flight holds go at the sweep', () => {
  it("discards a lapsed session's bytes (expired on any path), a cancelled one's sent afterwards, and keeps open ones and whole-blob writes", async () => {
    const { clock, blobs, quota, service, received } = world(4);
    const uploads = service();
    const open = () => received(uploads, new Uint8Array(8).fill(1));
    const lapsed = await open();
    clock.advance(61_000);
    // A quota read expires the lapsed session and releases its reservation, but leaves its bytes.
    expect((await quota.status(ALICE)).reserved).toBe(0);
    expect(blobs.staged.has(lapsed)).toBe(true);
    const kept = await open();
    const cancelled = await open();
    expect((await uploads.cancel({ accountId: ALICE }, cancelled)).ok).toBe(true);
    blobs.staged.set(cancelled, new Uint8Array(8)); // a direct PUT through its URL after the cancel
    blobs.staged.set('meta-00ff', new Uint8Array(3)); // a metadata replace between its stage and commit

    // The ledger's own sweep discards only the bytes of sessions it expires itself: these stay.
    await quota.sweep();
    expect(blobs.staged.has(lapsed) && blobs.staged.has(cancelled)).toBe(true);
    expect(await uploads.sweepStaging()).toBe(2);
    expect([...blobs.staged.keys()].sort()).toEqual([kept, 'meta-00ff'].sort());
  });
});

describe('two finalizes of one session in two processes', () => {
  it('both answer 200 with the same outcome, and the bytes are charged once', async () => {
    const { blobs, quota, service, received } = world(6);
    // Two services over the same stores: two processes, each with its own in-process ordering.
    const [a, b] = [service(), service()];
    const data = new Uint8Array(24).fill(9);
    const id = await received(a, data);
    const input = { protocolVersion: '2026-06-01', contentHash: sha256Hex(data), manifest: null };

    // A moves the bytes to their address and is held there, before its ledger write.
    blobs.armed = true;
    const first = a.finalize({ accountId: ALICE }, id, input);
    for (let i = 0; i < 100 && blobs.release === null; i++) await new Promise((r) => setImmediate(r));
    blobs.armed = false;
    // B finds nothing staged but the bytes stored: it completes the session (or finds it completed).
    const second = await b.finalize({ accountId: ALICE }, id, input);
    blobs.release!();
    expect(second).toMatchObject({ ok: true, value: { state: 'Completed' } });
    expect(await first).toMatchObject({ ok: true, value: { state: 'Completed' } });
    expect((await quota.status(ALICE)).used).toBe(24);
    expect((await quota.report(ALICE)).blobs.map((x) => x.contentHash)).toEqual([sha256Hex(data)]);
  });
});
