import { describe, expect, it } from 'vitest';
import { AssetService } from '../assets/service.js';
import { BlobReadService } from '../blobs/service.js';
import { blobsAgree, checkBlobStore } from '../blobs/verify.js';
import { sha256Hex } from '../encoding/bytes.js';
import type { QuotaLedger } from '../ports/quota-ledger.js';
import type { UploadSessions } from '../ports/upload-sessions.js';
import { admitAllWrites } from '../ports/write-guard.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryBlobStore } from '../testing/memory-blob-store.js';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { SeededRandom } from '../testing/seeded-random.js';
import { storedLink, testLinkId } from '../testing/links.js';
import { UploadService } from '../upload/service.js';
import { DEFAULT_QUOTA_POLICY, type QuotaPolicy } from './machine.js';
import { QuotaService } from './service.js';

/*
 * The GC sweep racing a write of the very bytes it collects, in two "processes" (services of their
 * own over the same stores, as two server processes over one database and one blob store), with
 * each interleaving forced at an exact point. Whatever the order, an acknowledged write's blob
 * must be at its address and in the ledger afterwards (blobs/handoff.ts).
 */

const ALICE = '0190c000-0000-7000-8000-00000000000a';
const POLICY: QuotaPolicy = { ...DEFAULT_QUOTA_POLICY, defaults: { soft: null, hard: 1_000_000 }, graceMs: 1000 };
const V = '2026-06-01';
const WRITE = { protocolVersion: V, intentId: null };

async function* once(bytes: Uint8Array) {
  yield bytes;
}

async function bytesOf(stream: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: number[] = [];
  for await (const c of stream) parts.push(...c);
  return new Uint8Array(parts);
}

/** The memory store, with a hook run once right after the next commit of a staging id it names. */
class HookedBlobStore extends MemoryBlobStore {
  afterCommit: { readonly of: (stagingId: string) => boolean; readonly run: () => Promise<void> } | null = null;
  override async commit(stagingId: string, contentHash: string) {
    const done = await super.commit(stagingId, contentHash);
    const hook = this.afterCommit;
    if (hook?.of(stagingId)) {
      this.afterCommit = null;
      await hook.run();
    }
    return done;
  }
}

/** `target` with `method` answering first, then running `after` (awaited) before its caller goes on. */
function after<T extends object>(target: T, method: keyof T & string, hook: (...args: unknown[]) => Promise<void>): T {
  return new Proxy(target, {
    get(t, key) {
      const value = Reflect.get(t, key, t) as unknown;
      if (typeof value !== 'function') return value;
      if (key !== method) return value.bind(t);
      return async (...args: unknown[]) => {
        const answer = await (value as (...a: unknown[]) => Promise<unknown>).apply(t, args);
        await hook(...args);
        return answer;
      };
    },
  });
}

function deployment() {
  const ports = createMemoryPorts();
  const clock = new FakeClock();
  const blobs = new HookedBlobStore();
  let seed = 1;
  /** One process: its own services over the shared stores (optionally seen through hooks). */
  const process = (o: { ledger?: QuotaLedger; sessions?: UploadSessions } = {}) => {
    const shared = { blobs, clock, random: new SeededRandom(seed++), writeGuard: admitAllWrites };
    const quota = new QuotaService({ ...shared, ledger: o.ledger ?? ports.quota, policy: POLICY });
    const sessions = o.sessions ?? ports.quota;
    const uploads = new UploadService({
      ...shared,
      sessions,
      assets: ports.quota,
      quota,
      ttlMs: 60_000,
      dropTtlMs: 60_000,
      federationPeers: [],
    });
    const assets = new AssetService({ ...shared, assets: ports.quota, sessions, quota });
    return { quota, uploads, assets };
  };
  type Process = ReturnType<typeof process>;
  /** An original of Alice's with `data` received, waiting for its finalize: its id. */
  const received = async (p: Process, data: Uint8Array): Promise<string> => {
    const u = await p.uploads.create(
      { accountId: ALICE },
      {
        declaredSize: data.length,
        kind: 'original',
        contentHash: null,
        albumId: null,
        intentId: null,
        deviceId: 'phone',
        protocolVersion: V,
      },
    );
    if (!u.ok) throw new Error(u.code);
    expect((await p.uploads.put({ accountId: ALICE }, u.value.uploadId, once(data), { protocolVersion: V })).ok).toBe(
      true,
    );
    return u.value.uploadId;
  };
  const finalize = (p: Process, id: string, data: Uint8Array) =>
    p.uploads.finalize({ accountId: ALICE }, id, { protocolVersion: V, contentHash: sha256Hex(data), manifest: null });
  /** `data` stored once as an asset of Alice's, which is then purged: its ledger row is the sweep's to take. */
  const storedThenPurged = async (p: Process, data: Uint8Array): Promise<void> => {
    const id = await received(p, data);
    expect(await finalize(p, id, data)).toMatchObject({ ok: true });
    expect((await p.assets.trash({ accountId: ALICE }, id, WRITE)).ok).toBe(true);
    expect((await p.assets.purge({ accountId: ALICE }, id, WRITE)).ok).toBe(true);
  };
  /** The blob is in the ledger and its bytes are at their address, whole; nothing is left aside. */
  const intact = async (data: Uint8Array): Promise<void> => {
    const hash = sha256Hex(data);
    expect(await ports.quota.findBlob(hash)).not.toBeNull();
    expect(await blobs.has(hash)).toBe(true);
    expect(blobs.blobs.get(hash)).toEqual(data);
    expect(blobs.quarantined.size).toBe(0);
  };
  return { ports, blobs, process, received, finalize, storedThenPurged, intact };
}

describe('the GC sweep and a finalize of the same bytes, in two processes', () => {
  const data = new Uint8Array(48).fill(7);
  const hash = sha256Hex(data);

  /** The finalize runs whole right after the sweep's `nth` ledger read of the hash. */
  async function finalizeInsideSweepRead(nth: number) {
    const d = deployment();
    const writer = d.process();
    await d.storedThenPurged(writer, data);
    const id = await d.received(writer, data);
    let reads = 0;
    let finalized: ReturnType<typeof d.finalize> | null = null;
    const sweeper = d.process({
      ledger: after(d.ports.quota, 'findBlob', async (h) => {
        if (h === hash && ++reads === nth) await (finalized = d.finalize(writer, id, data));
      }),
    });
    const report = await sweeper.quota.sweep();
    expect(report.swept.map((b) => b.contentHash)).toEqual([hash]);
    // A sweep that never read the hash that often: the finalize runs after it.
    expect(await (finalized ?? d.finalize(writer, id, data))).toMatchObject({
      ok: true,
      value: { state: 'Completed' },
    });
    await d.intact(data);
    expect(d.blobs.staged.has(id)).toBe(false);
  }

  it('the finalize commits and writes its row after the sweep read the ledger, before it took the bytes', () =>
    finalizeInsideSweepRead(1));

  it("the finalize commits and writes its row after the sweep's read that follows its quarantine", () =>
    finalizeInsideSweepRead(2));

  it('the finalize commits, the sweep runs whole, then the finalize writes its row', async () => {
    const d = deployment();
    const writer = d.process();
    const sweeper = d.process();
    await d.storedThenPurged(writer, data);
    const id = await d.received(writer, data);
    d.blobs.afterCommit = { of: (s) => s === id, run: async () => void (await sweeper.quota.sweep()) };
    expect(await d.finalize(writer, id, data)).toMatchObject({ ok: true, value: { state: 'Completed' } });
    expect(d.blobs.afterCommit).toBeNull();
    await d.intact(data);
    expect(d.blobs.staged.has(id)).toBe(false);
  });

  it("the sweep runs whole after the finalize's commit, and the staging sweep after its ledger write, before its check of the blob", async () => {
    const d = deployment();
    const sweeper = d.process();
    // The staging sweep finds the session finalized: its bytes are the finalize's last copy.
    const writer = d.process({
      sessions: after(d.ports.quota, 'completeUpload', async () => void (await sweeper.uploads.sweepStaging())),
    });
    await d.storedThenPurged(sweeper, data);
    const id = await d.received(writer, data);
    d.blobs.afterCommit = { of: (s) => s === id, run: async () => void (await sweeper.quota.sweep()) };
    expect(await d.finalize(writer, id, data)).toMatchObject({ ok: true, value: { state: 'Completed' } });
    await d.intact(data);
    expect(d.blobs.staged.size).toBe(0);
  });

  it('a metadata edit commits its bytes, the sweep runs whole, then the edit writes its row: the blob stays', async () => {
    const d = deployment();
    const writer = d.process();
    const sweeper = d.process();
    await d.storedThenPurged(writer, data);
    const live = await d.received(writer, new Uint8Array(16).fill(1));
    expect(await d.finalize(writer, live, new Uint8Array(16).fill(1))).toMatchObject({ ok: true });
    d.blobs.afterCommit = { of: (s) => s.startsWith('meta-'), run: async () => void (await sweeper.quota.sweep()) };
    expect(await writer.assets.replaceMetadata({ accountId: ALICE }, live, data, WRITE)).toMatchObject({ ok: true });
    expect(d.blobs.afterCommit).toBeNull();
    await d.intact(data);
    expect(d.blobs.staged.size).toBe(0);
  });

  it('a sweep stopped after its ledger write, before it took the bytes: the next sweep removes them (nobody is charged for them)', async () => {
    const d = deployment();
    const p = d.process();
    await d.storedThenPurged(p, data);
    // The killed sweep's transaction (rows removed, bytes credited), and nothing after it.
    expect((await d.ports.quota.sweep(POLICY, 0)).swept.map((b) => b.contentHash)).toEqual([hash]);
    expect(await d.blobs.has(hash)).toBe(true);
    const report = await p.quota.sweep();
    expect(report).toMatchObject({ swept: [], credited: {}, unrecorded: 1 });
    expect(await d.blobs.has(hash)).toBe(false);
    expect(d.blobs.quarantined.size).toBe(0);
    expect(blobsAgree(await checkBlobStore(d.ports.quota, d.blobs))).toBe(true);
  });

  it('bytes never stored before, committed by a finalize not yet recorded, while a sweep runs whole: the blob stays', async () => {
    const d = deployment();
    const writer = d.process();
    const sweeper = d.process();
    const id = await d.received(writer, data);
    let unrecorded = -1;
    // The sweep finds the bytes at their address with no row and takes them; the finalize's check
    // after its ledger write commits them again from its staging.
    d.blobs.afterCommit = { of: (s) => s === id, run: async () => void ({ unrecorded } = await sweeper.quota.sweep()) };
    expect(await d.finalize(writer, id, data)).toMatchObject({ ok: true, value: { state: 'Completed' } });
    expect(unrecorded).toBe(1);
    await d.intact(data);
    expect(d.blobs.staged.has(id)).toBe(false);
  });

  it('what a sweep left in quarantine is settled by the next: put back when the ledger names it, dropped when not', async () => {
    const d = deployment();
    const p = d.process();
    const kept = new Uint8Array(8).fill(2);
    const orphan = new Uint8Array(8).fill(3);
    const id = await d.received(p, kept);
    expect(await d.finalize(p, id, kept)).toMatchObject({ ok: true });
    // Bytes no ledger row names, as a fill that stopped before its ledger write leaves them.
    await d.blobs.stage('x', once(orphan), 8);
    expect(await d.blobs.commit('x', sha256Hex(orphan))).toBe('stored');
    await d.blobs.discard('x');
    // A sweep stopped right after moving both aside.
    expect(await d.blobs.quarantine(sha256Hex(kept))).not.toBeNull();
    expect(await d.blobs.quarantine(sha256Hex(orphan))).not.toBeNull();
    expect(await d.blobs.has(sha256Hex(kept))).toBe(false);

    await p.quota.sweep();
    await d.intact(kept);
    expect(await d.blobs.has(sha256Hex(orphan))).toBe(false);
  });
});

describe('a sweep killed between its quarantine and its second ledger read, after a finalize won the race', () => {
  const data = new Uint8Array(48).fill(9);
  const hash = sha256Hex(data);

  /** The state such a sweep leaves: the ledger names the blob, its bytes are only in quarantine, staging is gone. */
  async function crashed() {
    const d = deployment();
    const writer = d.process();
    await d.storedThenPurged(writer, data);
    const id = await d.received(writer, data);
    let reads = 0;
    const sweeper = d.process({
      ledger: after(d.ports.quota, 'findBlob', async (h) => {
        if (h !== hash) return;
        reads++;
        // Read 1 (collectBlob's, before the quarantine): the finalize runs whole here, its check of
        // the address sees the bytes (not yet quarantined), it lets its staging go, and is acknowledged.
        if (reads === 1)
          expect(await d.finalize(writer, id, data)).toMatchObject({ ok: true, value: { state: 'Completed' } });
        // Read 2 (after the quarantine): the process dies (kill -9) before putting the bytes back.
        if (reads === 2) throw new Error('killed');
      }),
    });
    await expect(sweeper.quota.sweep()).rejects.toThrow();
    expect(await d.ports.quota.findBlob(hash)).not.toBeNull();
    expect(d.blobs.staged.size).toBe(0);
    expect(await d.blobs.has(hash)).toBe(false);
    expect(d.blobs.quarantined.size).toBe(1);
    const reader = (ledger: Pick<QuotaLedger, 'findBlob'> = d.ports.quota) =>
      new BlobReadService({
        catalog: d.ports.quota,
        links: d.ports.links,
        blobs: d.blobs,
        ledger,
        clock: new FakeClock(),
      });
    return { ...d, id, reader };
  }

  it('a read of the blob puts it back and answers its bytes at once, not after the next sweep', async () => {
    const d = await crashed();
    const r = await d.reader().forAccount({ accountId: ALICE }, hash);
    expect(r).toMatchObject({ ok: true, value: { contentHash: hash, size: data.length } });
    if (!r.ok) return;
    expect(await bytesOf(await r.value.open())).toEqual(data);
    await d.intact(data);
  });

  it('so does a ranged read through a share link, the bytes put back between the stat and the read', async () => {
    const d = await crashed();
    const linkId = testLinkId(7);
    await d.ports.links.createLink(
      await storedLink(linkId, {
        ownerId: ALICE,
        kind: 'share',
        albumId: null,
        assetIds: [d.id],
        wrappedKey: 'k',
        sealKey: null,
        maxBytes: null,
        acceptedBytes: 0,
        createdAt: 0,
        expiresAt: null,
        revokedAt: null,
      }),
    );
    // Put back for the stat, then quarantined again (another sweep stopped at the same point) before the bytes are read.
    const r = await d.reader().forLink(linkId, hash);
    expect(r).toMatchObject({ ok: true, value: { size: data.length } });
    if (!r.ok) return;
    expect(await d.blobs.quarantine(hash)).not.toBeNull();
    expect(await bytesOf(await r.value.open({ start: 3, end: 10 }))).toEqual(data.slice(3, 11));
    await d.intact(data);
  });

  it('blobs verify puts it back first and finds nothing missing', async () => {
    const d = await crashed();
    const report = await checkBlobStore(d.ports.quota, d.blobs);
    expect(report).toMatchObject({ putBack: 1, missing: [], unreferenced: [], wrongSize: [] });
    expect(blobsAgree(report)).toBe(true);
    await d.intact(data);
  });

  it("a read never puts back a copy the ledger no longer names, nor drops one: that is the sweep's call", async () => {
    const d = await crashed();
    // The row goes (the asset purged and swept again) while the copy still sits aside: the read is a fault, the copy stays.
    const reader = d.reader({ findBlob: async () => null });
    await expect(reader.forAccount({ accountId: ALICE }, hash)).rejects.toMatchObject({ code: 'error.internal' });
    expect(await d.blobs.has(hash)).toBe(false);
    expect(d.blobs.quarantined.size).toBe(1);
    // A check reading the same ledger leaves it too (reported missing, as it is).
    expect(
      await checkBlobStore({ findBlob: async () => null, listBlobs: (a, l) => d.ports.quota.listBlobs(a, l) }, d.blobs),
    ).toMatchObject({ putBack: 0, missing: [{ contentHash: hash }] });
    expect(d.blobs.quarantined.size).toBe(1);
  });

  it('a read putting it back while the next sweep settles the same copy: the blob stays whole, in either order', async () => {
    for (const sweepFirst of [true, false]) {
      const d = await crashed();
      const sweeper = d.process();
      // The reader has found the copy and read the ledger; the sweep settles the copy right then
      // (or right after the reader put it back), and the reader's put-back finds nothing to do.
      let copies = 0;
      const store = after(d.blobs, sweepFirst ? 'quarantinedCopies' : 'unquarantine', async () => {
        if (copies++ === 0) await sweeper.quota.sweep();
      });
      const reader = new BlobReadService({
        catalog: d.ports.quota,
        links: d.ports.links,
        blobs: store,
        ledger: d.ports.quota,
        clock: new FakeClock(),
      });
      const r = await reader.forAccount({ accountId: ALICE }, hash);
      expect(copies).toBe(1);
      expect(r.ok, `sweep first: ${sweepFirst}`).toBe(true);
      if (!r.ok) return;
      expect(await bytesOf(await r.value.open())).toEqual(data);
      await d.intact(data);
    }
  });
});
