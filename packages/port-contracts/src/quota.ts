import { expect, it } from 'vitest';
import {
  censusBounds,
  holds,
  UPLOAD_IN_FLIGHT,
  UPLOAD_LAPSED,
  uploadState,
  type CompleteOutcome,
  type NewUpload,
  type QuotaPolicy,
  type SessionRecord,
  type UploadSessionRecord,
} from '@strongroom/core';
import { testAccount } from './fixtures.js';
import { describeContract } from './registry.js';
import type { Ports } from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';

let n = 0;
const id = (prefix: string): string => `0190${prefix}-0000-7000-8000-${String(++n).padStart(12, '0')}`;
const hash = (i: number): string => i.toString(16).padStart(64, '0');

function upload(uploaderId: string, over: Partial<NewUpload> = {}): NewUpload {
  return {
    id: id('d000'),
    uploaderId,
    kind: 'original',
    declaredSize: 100,
    contentHash: null,
    sourcePeer: null,
    albumId: null,
    intentId: null,
    dropLinkIdHash: null,
    createdAt: 1_000,
    expiresAt: 10_000,
    ...over,
  };
}

/** A deployment policy with this default hard limit (null: unlimited), no soft limit, a 1,000 ms grace. */
const policy = (hard: number | null, federatedShare = 0.25, maxOpenUploads = 1_000): QuotaPolicy => ({
  defaults: { soft: null, hard },
  graceMs: 1_000,
  federatedShare,
  maxOpenUploads,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
});
const UNLIMITED = policy(null);

/** The session as a store must hold it after a plain reservation by its own uploader. */
const pending = (u: NewUpload): UploadSessionRecord => ({
  ...u,
  payerId: u.uploaderId,
  state: 'Pending',
  receivedSize: null,
  receivedHash: null,
  assetId: null,
});

/** Opens and names the outcome the way the tests below read it. */
async function open(
  s: Ports['quota'],
  u: NewUpload,
  hard: number | null,
  now: number,
  p = policy(hard),
): Promise<'reserved' | 'merged' | 'exceeded' | 'write_refused' | 'federated_budget' | 'too_many' | 'not_found'> {
  const r = await s.openUpload(u, p, now);
  if (!r.ok)
    return r.code.slice(r.code.lastIndexOf('.') + 1) as
      | 'exceeded'
      | 'write_refused'
      | 'federated_budget'
      | 'too_many'
      | 'not_found';
  return r.value.state === 'Merged' ? 'merged' : 'reserved';
}

/** What `replaceMetadata` answers when it wrote the edit. */
const REPLACED = { ok: true, value: undefined };

const outcome = (c: CompleteOutcome): string => (typeof c === 'string' ? c : c.outcome);

async function using(setup: Setup, body: (store: Ports['quota'], ports: Ports) => Promise<void>): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    await body(ports.quota, ports);
  } finally {
    await cleanup?.();
  }
}

/** Puts `accountId` under `sponsorId` in the ledger (null: pays for itself), through the store that decides it. */
async function sponsor(ports: Ports, accountId: string, sponsorId: string | null): Promise<void> {
  expect(await ports.sponsorship.setSponsor(accountId, sponsorId)).toEqual({ ok: true, value: undefined });
}

/** Stores a blob of `size` charged to `payer` as a finished original; returns the asset id. */
async function stored(s: Ports['quota'], payer: string, h: string, size: number, now = 1_000): Promise<string> {
  const u = upload(payer, { declaredSize: size });
  expect(await open(s, u, null, now)).toBe('reserved');
  expect(
    outcome(
      await s.completeUpload(
        { uploadId: u.id, contentHash: h, size, asset: { create: { id: u.id, ownerId: payer, dropExpiresAt: null } } },
        UNLIMITED,
        now,
      ),
    ),
  ).not.toBe('not_open');
  return u.id;
}

export function describeQuotaContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'quota', 'QuotaLedger / UploadSessions / AssetCatalog', () => {
    it('reserves atomically against the hard limit and writes nothing when refused', () =>
      using(setup, async (s) => {
        const a = id('a000');
        expect(await s.readLedger(a, 0)).toMatchObject({
          accountId: a,
          charged: 0,
          reserved: 0,
          limits: null,
          hardSince: null,
          suspendedAt: null,
          sponsorId: null,
        });
        const first = upload(a, { declaredSize: 600 });
        expect(await open(s, first, 1000, 1_000)).toBe('reserved');
        const over = upload(a, { declaredSize: 401 });
        expect(await open(s, over, 1000, 1_000)).toBe('exceeded');
        expect(await s.findUpload(over.id)).toBeNull();
        expect(await open(s, upload(a, { declaredSize: 400 }), 1000, 1_000)).toBe('reserved');
        expect((await s.readLedger(a, 1_000)).reserved).toBe(1000);
        expect(await open(s, upload(a, { declaredSize: 1 }), null, 1_000)).toBe('reserved');
        expect(await s.findUpload(first.id)).toEqual(pending(first));
      }));

    it("a guest's drop into an album counts in flight for it until finalized, as any upload does", async () => {
      const { ports, cleanup } = await setup();
      try {
        const s = ports.quota;
        const owner = id('a000');
        // A drop opens only through a live upload link (the store checks it in its transaction).
        await ports.links.createLink({
          idHash: 'link-2',
          sealedId: 'v1.sealed.id',
          ownerId: owner,
          kind: 'upload',
          albumId: 'album-2',
          assetIds: [],
          wrappedKey: null,
          sealKey: 'c2VhbA',
          maxBytes: null,
          acceptedBytes: 0,
          createdAt: 1_000,
          expiresAt: null,
          revokedAt: null,
        });
        const d = upload(owner, { declaredSize: 10, albumId: 'album-2', dropLinkIdHash: 'link-2' });
        const opened = await s.openDrop({ ...d, dropLinkIdHash: 'link-2' }, 'cd'.repeat(32), UNLIMITED, 1_000);
        expect(opened.ok).toBe(true);
        expect(await s.countInFlightUploads('album-2', 1_000)).toBe(1);
        expect(await s.markUploading(d.id, 1_001)).toBe(true);
        expect(await s.countInFlightUploads('album-2', 1_001)).toBe(1);
        const done = await s.completeUpload(
          {
            uploadId: d.id,
            contentHash: 'ab'.repeat(32),
            size: 10,
            asset: { create: { id: d.id, ownerId: owner, dropExpiresAt: 9_000 } },
          },
          UNLIMITED,
          1_002,
        );
        expect(outcome(done)).not.toBe('not_open');
        expect(await s.countInFlightUploads('album-2', 1_002)).toBe(0);
      } finally {
        await cleanup?.();
      }
    });

    it("counts an upload in flight exactly when core's UPLOAD_IN_FLIGHT takes it, at every instant around its expiry", () =>
      using(setup, async (s) => {
        const a = id('a000');
        const u = upload(a, { declaredSize: 10, albumId: 'album-f', expiresAt: 5_000 });
        await open(s, u, null, 1_000);
        const stored = (await s.findUpload(u.id))!;
        // The expected answers come from core's filter, not from numbers here: a store that
        // restated the predicate (>= for >) would part from it at 5_000.
        for (const now of [4_998, 4_999, 5_000, 5_001]) {
          const expected = holds(UPLOAD_IN_FLIGHT, stored, { now }) ? 1 : 0;
          expect(await s.countInFlightUploads('album-f', now), `at ${now}`).toBe(expected);
        }
        expect(holds(UPLOAD_IN_FLIGHT, stored, { now: 4_999 })).toBe(true);
        expect(holds(UPLOAD_IN_FLIGHT, stored, { now: 5_000 })).toBe(false);
        // A write needs the session in flight; the sweep expires what core's UPLOAD_LAPSED takes.
        expect(await s.markUploading(u.id, 5_000)).toBe(holds(UPLOAD_IN_FLIGHT, stored, { now: 5_000 }));
        expect((await s.sweep(UNLIMITED, 4_999)).expiredUploads).toEqual([]);
        expect(holds(UPLOAD_LAPSED, stored, { now: 5_000 })).toBe(true);
        expect((await s.sweep(UNLIMITED, 5_000)).expiredUploads).toEqual([u.id]);
        expect((await s.findUpload(u.id))!.state).toBe(uploadState(stored, 5_000));
      }));

    it('expires timed-out sessions lazily and releases their reservation', () =>
      using(setup, async (s) => {
        const a = id('a000');
        const u = upload(a, { declaredSize: 900, albumId: 'album-1', expiresAt: 5_000 });
        await open(s, u, 1000, 1_000);
        expect(await s.countInFlightUploads('album-1', 4_999)).toBe(1);
        expect(await s.countInFlightUploads('album-1', 5_000)).toBe(0);
        expect(await open(s, upload(a, { declaredSize: 900 }), 1000, 4_999)).toBe('exceeded');
        expect(await open(s, upload(a, { declaredSize: 900 }), 1000, 5_000)).toBe('reserved');
        expect((await s.findUpload(u.id))!.state).toBe('Expired');
        expect(await s.markUploading(u.id, 5_000)).toBe(false);
        expect(await s.cancelUpload(u.id, UNLIMITED, 5_000)).toBe(false);
      }));

    it('never merges at creation (a stored hash reserves like any other); finalize merges, charging nothing, and charges the real size once', () =>
      using(setup, async (s) => {
        const a = id('a000');
        const b = id('a000');
        const u = upload(a, { declaredSize: 500 });
        await open(s, u, null, 1_000);
        expect(await s.markUploading(u.id, 1_000)).toBe(true);
        expect((await s.findUpload(u.id))!.state).toBe('Uploading');
        expect(await s.markReceived(u.id, { size: 300, hash: hash(1) }, 1_000)).toBe(true);
        expect(
          outcome(
            await s.completeUpload(
              {
                uploadId: u.id,
                contentHash: hash(1),
                size: 300,
                asset: { create: { id: u.id, ownerId: a, dropExpiresAt: null } },
              },
              UNLIMITED,
              1_000,
            ),
          ),
        ).toBe('completed');
        expect(await s.readLedger(a, 1_000)).toMatchObject({ charged: 300, reserved: 0 });
        expect(await s.findUpload(u.id)).toMatchObject({ state: 'Completed', assetId: u.id, receivedSize: 300 });
        expect(await s.findBlob(hash(1))).toEqual({
          contentHash: hash(1),
          size: 300,
          chargedTo: a,
          peer: null,
          storedAt: 1_000,
        });
        expect(
          outcome(
            await s.completeUpload(
              {
                uploadId: u.id,
                contentHash: hash(1),
                size: 300,
                asset: { create: { id: id('e000'), ownerId: a, dropExpiresAt: null } },
              },
              UNLIMITED,
              1_000,
            ),
          ),
        ).toBe('not_open');
        // Dedup is global, but only with the bytes: b announcing a's hash reserves like anyone (it
        // learns nothing of what is stored), and its finalize of those bytes is a merge, charged to nobody.
        const m = upload(b, { declaredSize: 300, contentHash: hash(1) });
        expect(await open(s, m, 10, 1_000)).toBe('exceeded');
        expect(await open(s, m, null, 1_000)).toBe('reserved');
        expect((await s.findUpload(m.id))!.state).toBe('Pending');
        expect(await s.readLedger(b, 1_000)).toMatchObject({ charged: 0, reserved: 300 });
        expect(await s.markReceived(m.id, { size: 300, hash: hash(1) }, 1_000)).toBe(true);
        expect(
          outcome(
            await s.completeUpload(
              {
                uploadId: m.id,
                contentHash: hash(1),
                size: 300,
                asset: { create: { id: m.id, ownerId: b, dropExpiresAt: null } },
              },
              UNLIMITED,
              1_000,
            ),
          ),
        ).toBe('merged');
        expect(
          outcome(
            await s.completeUpload(
              {
                uploadId: m.id,
                contentHash: hash(1),
                size: 300,
                asset: { create: { id: id('e000'), ownerId: b, dropExpiresAt: null } },
              },
              UNLIMITED,
              1_000,
            ),
          ),
        ).toBe('not_open');
        expect(await s.readLedger(b, 1_000)).toMatchObject({ charged: 0, reserved: 0 });
        // A merge at finalize releases the reservation and charges nothing.
        const late = upload(b, { declaredSize: 400 });
        await open(s, late, null, 1_000);
        expect(
          outcome(
            await s.completeUpload(
              { uploadId: late.id, contentHash: hash(1), size: 300, asset: { attachTo: m.id } },
              UNLIMITED,
              1_000,
            ),
          ),
        ).toBe('merged');
        expect(await s.readLedger(b, 1_000)).toMatchObject({ charged: 0, reserved: 0 });
        expect((await s.findAsset(m.id))!.blobs).toEqual([
          { kind: 'original', contentHash: hash(1), size: 300 },
          { kind: 'original', contentHash: hash(1), size: 300 },
        ]);
        expect(await s.listChargedBlobs(a)).toHaveLength(1);
        expect(await s.listChargedBlobs(b)).toEqual([]);
        // The whole ledger in hash order, by keyset pages.
        const all = await s.listBlobs(null, 1000);
        expect(all.map((r) => r.contentHash)).toContain(hash(1));
        expect(all.map((r) => r.contentHash)).toEqual([...all.map((r) => r.contentHash)].sort());
        expect(await s.listBlobs(hash(1), 1000)).toEqual(all.filter((r) => r.contentHash > hash(1)));
        expect(await s.listBlobs(null, 1)).toEqual(all.slice(0, 1));
      }));

    it('refuses to attach to a missing asset without changing anything', () =>
      using(setup, async (s) => {
        const a = id('a000');
        const u = upload(a, { kind: 'derivative' });
        await open(s, u, null, 1_000);
        expect(
          outcome(
            await s.completeUpload(
              { uploadId: u.id, contentHash: hash(2), size: 10, asset: { attachTo: id('e000') } },
              UNLIMITED,
              1_000,
            ),
          ),
        ).toBe('asset_missing');
        expect(await s.readLedger(a, 1_000)).toMatchObject({ charged: 0, reserved: 100 });
        expect(await s.cancelUpload(u.id, UNLIMITED, 1_000)).toBe(true);
        expect(await s.cancelUpload(u.id, UNLIMITED, 1_000)).toBe(false);
        expect(await s.readLedger(a, 1_000)).toMatchObject({ reserved: 0 });
        expect((await s.findUpload(u.id))!.state).toBe('Cancelled');
      }));

    it('keeps trash charged; purge drops references; only the sweep credits, to whoever was charged', () =>
      using(setup, async (s) => {
        const a = id('a000');
        const b = id('a000');
        const x = await stored(s, a, hash(3), 200);
        const y = await stored(s, a, hash(4), 50);
        // b references a's blob too.
        const m = upload(b, { contentHash: hash(3) });
        await open(s, m, null, 1_000);
        await s.completeUpload(
          {
            uploadId: m.id,
            contentHash: hash(3),
            size: 200,
            asset: { create: { id: m.id, ownerId: b, dropExpiresAt: null } },
          },
          UNLIMITED,
          1_000,
        );
        expect(await s.purgeAsset(x, 2_000)).toBe(false); // live: trash first
        expect(await s.trashAsset(x, 2_000)).toBe(true);
        expect(await s.trashAsset(x, 2_000)).toBe(false);
        expect(await s.findAsset(x)).toMatchObject({ state: 'trashed', trashedAt: 2_000 });
        expect(await s.restoreAsset(x, 2_000)).toBe(true);
        expect(await s.restoreAsset(x, 2_000)).toBe(false);
        await s.trashAsset(x, 2_000);
        await s.trashAsset(y, 2_000);
        expect((await s.readLedger(a, 2_000)).charged).toBe(250);
        expect(await s.purgeAsset(x, 2_000)).toBe(true);
        expect(await s.listTrash(a)).toEqual([{ assetId: y, albumId: null }]);
        expect(await s.emptyTrash(a, [y], 2_000)).toBe(1);
        expect(await s.findAsset(y)).toBeNull();
        expect((await s.readLedger(a, 2_000)).charged).toBe(250);
        const swept = await s.sweep(UNLIMITED, 3_000);
        expect(swept.swept).toEqual([{ contentHash: hash(4), size: 50, chargedTo: a }]);
        expect((await s.readLedger(a, 3_000)).charged).toBe(200);
        // b's purge frees the last reference: credited to a, who was charged.
        await s.trashAsset(m.id, 3_000);
        await s.purgeAsset(m.id, 3_000);
        expect((await s.sweep(UNLIMITED, 4_000)).swept).toEqual([{ contentHash: hash(3), size: 200, chargedTo: a }]);
        expect(await s.readLedger(a, 4_000)).toMatchObject({ charged: 0 });
        expect(await s.findBlob(hash(3))).toBeNull();
      }));

    it("a trash, restore, purge or trash-empty stamps the owner's trashActivityAt in its transaction; a refused step or an empty trash does not", () =>
      using(setup, async (s) => {
        const a = id('a000');
        const x = await stored(s, a, hash(60), 10);
        const y = await stored(s, a, hash(61), 10);
        expect((await s.readLedger(a, 1_000)).trashActivityAt).toBeNull();
        expect(await s.restoreAsset(x, 1_500)).toBe(false); // live: nothing to restore, nothing stamped
        expect(await s.purgeAsset(x, 1_500)).toBe(false);
        expect(await s.emptyTrash(a, [x, y], 1_500)).toBe(0);
        expect((await s.readLedger(a, 1_500)).trashActivityAt).toBeNull();
        expect(await s.trashAsset(x, 2_000)).toBe(true);
        expect((await s.readLedger(a, 2_000)).trashActivityAt).toBe(2_000);
        expect(await s.restoreAsset(x, 3_000)).toBe(true);
        expect((await s.readLedger(a, 3_000)).trashActivityAt).toBe(3_000);
        await s.trashAsset(x, 4_000);
        await s.trashAsset(y, 4_000);
        expect(await s.purgeAsset(x, 5_000)).toBe(true);
        expect((await s.readLedger(a, 5_000)).trashActivityAt).toBe(5_000);
        expect(await s.emptyTrash(a, [y], 6_000)).toBe(1);
        expect((await s.readLedger(a, 6_000)).trashActivityAt).toBe(6_000);
        // Another owner's row is not touched.
        const b = id('a000');
        expect((await s.readLedger(b, 6_000)).trashActivityAt).toBeNull();
      }));

    it("opens a provenance or metadata upload past the hard limit as a follow-up of the uploader's trash, within the overdraft (core admitWrite on the stored stamp)", () =>
      using(setup, async (s, ports) => {
        const a = id('a000');
        const p: QuotaPolicy = { ...policy(1_000), followUpMs: 1_000, followUpOverdraft: 50 };
        const x = await stored(s, a, hash(70), 1_000);
        // HardExceeded, no trash yet: refused as any upload is.
        expect(await open(s, upload(a, { kind: 'provenance', declaredSize: 10 }), 1_000, 2_000, p)).toBe('exceeded');
        expect(await s.trashAsset(x, 2_000)).toBe(true);
        expect(await open(s, upload(a, { kind: 'provenance', declaredSize: 10 }), 1_000, 2_500, p)).toBe('reserved');
        expect(await open(s, upload(a, { kind: 'metadata', declaredSize: 40 }), 1_000, 2_500, p)).toBe('reserved');
        // Other kinds are not follow-ups; past hard limit + overdraft nothing is.
        expect(await open(s, upload(a, { kind: 'original', declaredSize: 1 }), 1_000, 2_500, p)).toBe('exceeded');
        expect(await open(s, upload(a, { kind: 'provenance', declaredSize: 1 }), 1_000, 2_500, p)).toBe('exceeded');
        expect(await s.readLedger(a, 2_500)).toMatchObject({ charged: 1_000, reserved: 50 });
        // Outside the window, the normal rule again.
        expect(await s.restoreAsset(x, 3_000)).toBe(true);
        expect(
          await open(s, upload(a, { kind: 'provenance', declaredSize: 10, expiresAt: 100_000 }), 1_000, 4_001, p),
        ).toBe('exceeded');
        // A sponsored account: its own trash is the evidence, its sponsor's row the limits.
        const payer = id('a000');
        const kid = id('a000');
        await sponsor(ports, kid, payer);
        const k = await stored(s, kid, hash(71), 1_000);
        expect(await s.readLedger(payer, 5_000)).toMatchObject({ charged: 1_000 });
        expect(await s.trashAsset(k, 5_000)).toBe(true);
        expect(await s.readLedger(kid, 5_000)).toMatchObject({ trashActivityAt: 5_000, charged: 0 });
        expect(await open(s, upload(payer, { kind: 'provenance', declaredSize: 10 }), 1_000, 5_000, p)).toBe(
          'exceeded',
        );
        expect(await open(s, upload(kid, { kind: 'provenance', declaredSize: 10 }), 1_000, 5_000, p)).toBe('reserved');
        expect(await s.readLedger(payer, 5_000)).toMatchObject({ charged: 1_000, reserved: 10 });
      }));

    it('pending drops: adoption before expiry, otherwise freed by the sweep', () =>
      using(setup, async (s) => {
        const owner = id('a000');
        const mk = async (h: string): Promise<string> => {
          // The link and its cap are the link contract's; here only the pending asset's life matters.
          const u = upload(owner, { declaredSize: 70 });
          await open(s, u, null, 1_000);
          await s.completeUpload(
            {
              uploadId: u.id,
              contentHash: h,
              size: 70,
              asset: { create: { id: u.id, ownerId: owner, dropExpiresAt: 5_000 } },
            },
            UNLIMITED,
            1_000,
          );
          return u.id;
        };
        const kept = await mk(hash(5));
        const lost = await mk(hash(6));
        expect(await s.findAsset(kept)).toMatchObject({ state: 'pending_drop', dropExpiresAt: 5_000, ownerId: owner });
        expect(await s.trashAsset(kept, 1_000)).toBe(false);
        expect(await s.adoptDrop(kept, 4_999)).toBe(true);
        expect(await s.findAsset(kept)).toMatchObject({ state: 'live', dropExpiresAt: null });
        expect(await s.adoptDrop(lost, 5_000)).toBe(false);
        expect((await s.readLedger(owner, 5_000)).charged).toBe(140);
        const r = await s.sweep(UNLIMITED, 5_000);
        expect(r.swept).toEqual([{ contentHash: hash(6), size: 70, chargedTo: owner }]);
        expect(await s.findAsset(lost)).toBeNull();
      }));

    // The lifecycle is read, decided by core and written in one transaction (a row lock on
    // PostgreSQL): racing steps on one asset, over several connections, leave exactly one winner.
    it('racing trash, restore, purge and empty-trash on one asset: exactly one wins', async () => {
      const { ports, connect, cleanup } = await setup();
      try {
        const stores = [ports.quota, ...(await Promise.all([connect(), connect(), connect()])).map((p) => p.quota)];
        const a = id('a000');
        const x = await stored(ports.quota, a, hash(90), 10);
        // Four trashes of one live asset.
        const trashed = await Promise.all(stores.map((s) => s.trashAsset(x, 2_000)));
        expect(trashed.filter(Boolean)).toHaveLength(1);
        expect(await ports.quota.findAsset(x)).toMatchObject({ state: 'trashed', trashedAt: 2_000 });
        // Two purges and two restores of the trashed asset: whichever goes first, the others find
        // the row gone or live, and both refuse.
        const steps = await Promise.all(
          stores.map((s, i) => (i % 2 === 0 ? s.purgeAsset(x, 2_000) : s.restoreAsset(x, 2_000))),
        );
        expect(steps.filter(Boolean)).toHaveLength(1);
        const after = await ports.quota.findAsset(x);
        const purgeWon = steps[0] || steps[2];
        expect(after === null).toBe(purgeWon);
        if (after) expect(after).toMatchObject({ state: 'live', trashedAt: null });
        // Emptying the trash racing a purge of one of its assets: each asset deleted exactly once.
        const y = await stored(ports.quota, a, hash(91), 10);
        const z = await stored(ports.quota, a, hash(92), 10);
        await ports.quota.trashAsset(y, 3_000);
        await ports.quota.trashAsset(z, 3_000);
        const both = [y, z];
        const [emptied, purgedY, emptied2] = await Promise.all([
          stores[1]!.emptyTrash(a, both, 3_000),
          stores[2]!.purgeAsset(y, 3_000),
          stores[3]!.emptyTrash(a, both, 3_000),
        ]);
        expect(emptied + emptied2 + (purgedY ? 1 : 0)).toBe(2);
        expect(await ports.quota.findAsset(y)).toBeNull();
        expect(await ports.quota.findAsset(z)).toBeNull();
        if (after) expect(await ports.quota.findAsset(x)).toMatchObject({ state: 'live' });
      } finally {
        await cleanup?.();
      }
    });

    it('racing adoptions of one pending drop: exactly one wins', async () => {
      const { ports, connect, cleanup } = await setup();
      try {
        const stores = [ports.quota, ...(await Promise.all([connect(), connect(), connect()])).map((p) => p.quota)];
        const owner = id('a000');
        const u = upload(owner, { declaredSize: 70 });
        await open(ports.quota, u, null, 1_000);
        await ports.quota.completeUpload(
          {
            uploadId: u.id,
            contentHash: hash(93),
            size: 70,
            asset: { create: { id: u.id, ownerId: owner, dropExpiresAt: 5_000 } },
          },
          UNLIMITED,
          1_000,
        );
        // Two adoptions against two discards: exactly one is acknowledged.
        const steps = await Promise.all(
          stores.map((s, i) => (i % 2 === 0 ? s.adoptDrop(u.id, 2_000) : s.discardDrop(u.id))),
        );
        expect(steps.filter(Boolean)).toHaveLength(1);
        const after = await ports.quota.findAsset(u.id);
        expect(after === null).toBe(steps[1] || steps[3]);
        if (after) {
          expect(after).toMatchObject({ state: 'live', dropExpiresAt: null });
          // Adopted, it is no pending drop: a later discard is refused and the asset stays.
          expect(await ports.quota.discardDrop(u.id)).toBe(false);
          expect(await ports.quota.findAsset(u.id)).toMatchObject({ state: 'live' });
        }
      } finally {
        await cleanup?.();
      }
    });

    it('sweep reports sessions it expired', () =>
      using(setup, async (s) => {
        const a = id('a000');
        const u = upload(a, { expiresAt: 2_000 });
        await open(s, u, null, 1_000);
        expect((await s.sweep(UNLIMITED, 1_999)).expiredUploads).toEqual([]);
        expect((await s.sweep(UNLIMITED, 2_000)).expiredUploads).toEqual([u.id]);
        expect((await s.readLedger(a, 2_000)).reserved).toBe(0);
      }));

    it('a federated fill is an upload session: reserved at creation against the hard limit and the per-peer budget, cached to its payer at finalize', () =>
      using(setup, async (s) => {
        const r = id('a000');
        const fill = (size: number, peer: string, h: string) =>
          upload(r, { kind: 'federated', sourcePeer: peer, declaredSize: size, contentHash: h });
        // Budget 25 % of 1,000 = 250 per peer; the hard limit 1,000 across everything.
        const one = fill(200, 'https://p.example', hash(20));
        expect(await open(s, one, 1_000, 1_000)).toBe('reserved');
        expect(await s.readLedger(r, 1_000)).toMatchObject({ reserved: 200 });
        expect(await open(s, fill(51, 'https://p.example', hash(21)), 1_000, 1_000)).toBe('federated_budget');
        const others = ['https://q.example', 'https://r.example', 'https://s.example'].map((peer, i) =>
          fill(250, peer, hash(22 + i)),
        );
        for (const f of others) expect(await open(s, f, 1_000, 1_000)).toBe('reserved');
        // 950 reserved: the hard limit refuses the next fill whatever its peer, and nothing is written.
        const over = fill(51, 'https://t.example', hash(30));
        expect(await open(s, over, 1_000, 1_000)).toBe('exceeded');
        expect(await s.findUpload(over.id)).toBeNull();
        expect(await s.markReceived(one.id, { size: 180, hash: hash(20) }, 1_000)).toBe(true);
        expect(
          outcome(
            await s.completeUpload(
              { uploadId: one.id, contentHash: hash(20), size: 180, asset: null },
              policy(1_000),
              1_000,
            ),
          ),
        ).toBe('completed');
        expect(await s.findBlob(hash(20))).toMatchObject({ size: 180, chargedTo: r, peer: 'https://p.example' });
        expect(await s.readLedger(r, 1_000)).toMatchObject({ charged: 180, reserved: 750 });
        expect(await s.cancelUpload(others[0]!.id, policy(1_000), 1_000)).toBe(true);
        // Cached bytes count against the peer's budget as the open fill did.
        expect(await open(s, fill(71, 'https://p.example', hash(31)), 1_000, 1_000)).toBe('federated_budget');
        expect(await open(s, fill(70, 'https://p.example', hash(31)), 1_000, 1_000)).toBe('reserved');
        // Held by the receiver's cache reference, not by an asset: the sweep keeps it.
        expect((await s.sweep(UNLIMITED, 1_000)).swept).toEqual([]);
      }));

    it('at most maxOpenUploads open sessions per payer, every kind counted; expiry, cancel and finalize free a place', () =>
      using(setup, async (s) => {
        const a = id('a000');
        const p = policy(null, 0.25, 3);
        const u = [
          upload(a),
          upload(a, { kind: 'federated', sourcePeer: 'https://p.example', contentHash: hash(40) }),
          upload(a, { expiresAt: 2_000 }),
        ];
        for (const x of u) expect(await open(s, x, null, 1_000, p)).toBe('reserved');
        const fourth = upload(a);
        const refused = await s.openUpload(fourth, p, 1_000);
        expect(refused).toMatchObject({ ok: false, code: 'error.request.too_many' });
        expect(await s.findUpload(fourth.id)).toBeNull();
        expect(await s.readLedger(a, 1_000)).toMatchObject({ reserved: 300 });
        expect(await s.cancelUpload(u[0]!.id, UNLIMITED, 1_000)).toBe(true);
        expect(await open(s, fourth, null, 1_000, p)).toBe('reserved');
        expect(await open(s, upload(a), null, 1_999, p)).toBe('too_many');
        expect(await open(s, upload(a), null, 2_000, p)).toBe('reserved'); // the third lapsed
        // Another payer has its own count.
        expect(await open(s, upload(id('a000')), null, 2_000, p)).toBe('reserved');
      }));

    it('a federated fill stays until its receiver evicts it; the sweep then credits the receiver', () =>
      using(setup, async (s) => {
        const r = id('a000');
        const fill = upload(r, {
          kind: 'federated',
          sourcePeer: 'https://p.example',
          declaredSize: 200,
          contentHash: hash(7),
        });
        expect(await open(s, fill, 1_000, 1_000)).toBe('reserved');
        expect(await s.markReceived(fill.id, { size: 200, hash: hash(7) }, 1_000)).toBe(true);
        expect(
          outcome(
            await s.completeUpload(
              { uploadId: fill.id, contentHash: hash(7), size: 200, asset: null },
              policy(1_000),
              1_000,
            ),
          ),
        ).toBe('completed');
        expect((await s.sweep(UNLIMITED, 1_000)).swept).toEqual([]);
        expect(await s.evictFederated(r, 'https://p.example', hash(7))).toBe(true);
        expect(await s.evictFederated(r, 'https://p.example', hash(7))).toBe(false);
        expect((await s.sweep(UNLIMITED, 1_000)).swept).toEqual([{ contentHash: hash(7), size: 200, chargedTo: r }]);
        expect((await s.readLedger(r, 1_000)).charged).toBe(0);
      }));

    it('replaces metadata: new blob charged, old reference dropped', () =>
      using(setup, async (s) => {
        const a = id('a000');
        const x = await stored(s, a, hash(9), 10);
        expect(
          await s.replaceMetadata({ assetId: x, accountId: a, contentHash: hash(10), size: 30 }, UNLIMITED, 2_000),
        ).toEqual(REPLACED);
        expect(
          await s.replaceMetadata({ assetId: x, accountId: a, contentHash: hash(11), size: 5 }, UNLIMITED, 2_000),
        ).toEqual(REPLACED);
        expect((await s.findAsset(x))!.blobs.map((b) => [b.kind, b.contentHash])).toEqual([
          ['original', hash(9)],
          ['metadata', hash(11)],
        ]);
        expect((await s.readLedger(a, 2_000)).charged).toBe(45);
        expect((await s.sweep(UNLIMITED, 2_000)).swept.map((b) => b.contentHash)).toEqual([hash(10)]);
        await s.trashAsset(x, 2_000);
        expect(
          await s.replaceMetadata({ assetId: x, accountId: a, contentHash: hash(12), size: 5 }, UNLIMITED, 2_000),
        ).toMatchObject({ ok: false, code: 'error.conflict' });
        expect(await s.findBlob(hash(12))).toBeNull();
        expect(
          await s.replaceMetadata(
            { assetId: id('e000'), accountId: a, contentHash: hash(12), size: 5 },
            UNLIMITED,
            2_000,
          ),
        ).toMatchObject({ ok: false, code: 'error.conflict' });
      }));

    it("decides a metadata edit itself, in its transaction: GraceExpired and Suspended refuse growth (stored hash or not) and nothing is written; a follow-up is held to the overdraft line; a sponsored account spends its sponsor's", () =>
      using(setup, async (s, ports) => {
        const a = id('a000');
        const p: QuotaPolicy = { ...policy(1_000), followUpMs: 1_000, followUpOverdraft: 50 };
        const x = await stored(s, a, hash(80), 990);
        const y = await stored(s, a, hash(81), 10);
        await stored(s, id('a000'), hash(82), 20);
        expect(
          await s.replaceMetadata({ assetId: y, accountId: a, contentHash: hash(83), size: 10 }, UNLIMITED, 1_000),
        ).toEqual(REPLACED);
        // Used 1,010 since 1,000 (hard 1,000, grace 1,000 ms): GraceExpired from 2,001 on.
        expect(await s.settleHardSince(a, p, 1_000)).toBe(1_000);
        const grow = await s.replaceMetadata({ assetId: y, accountId: a, contentHash: hash(84), size: 11 }, p, 2_500);
        expect(grow).toMatchObject({ ok: false, code: 'error.quota.write_refused', data: { state: 'GraceExpired' } });
        // A stored hash is refused the same: the answer never says whether a hash is stored.
        expect(
          await s.replaceMetadata({ assetId: y, accountId: a, contentHash: hash(82), size: 20 }, p, 2_500),
        ).toEqual(grow);
        expect(await s.findBlob(hash(84))).toBeNull();
        expect((await s.findAsset(y))!.blobs.filter((b) => b.kind === 'metadata')).toEqual([
          { kind: 'metadata', contentHash: hash(83), size: 10 },
        ]);
        expect(await s.readLedger(a, 2_500)).toMatchObject({ charged: 1_010, hardSince: 1_000 });
        // Same size is no growth: admitted, the new blob charged whole (the old is credited by the sweep).
        expect(
          await s.replaceMetadata({ assetId: y, accountId: a, contentHash: hash(85), size: 10 }, p, 2_500),
        ).toEqual(REPLACED);
        expect(await s.readLedger(a, 2_500)).toMatchObject({ charged: 1_020 });
        // A follow-up of the owner's trash: growth admitted while used + the new blob stays within 1,050.
        expect(await s.trashAsset(x, 3_000)).toBe(true);
        expect(
          await s.replaceMetadata({ assetId: y, accountId: a, contentHash: hash(86), size: 31 }, p, 3_500),
        ).toMatchObject({ ok: false, code: 'error.quota.write_refused' });
        expect(
          await s.replaceMetadata({ assetId: y, accountId: a, contentHash: hash(86), size: 30 }, p, 3_500),
        ).toEqual(REPLACED);
        expect(await s.readLedger(a, 3_500)).toMatchObject({ charged: 1_050 });
        // Suspended refuses growth even as a follow-up.
        await s.setSuspended(a, 3_600);
        expect(
          await s.replaceMetadata({ assetId: y, accountId: a, contentHash: hash(87), size: 40 }, p, 3_700),
        ).toMatchObject({ ok: false, code: 'error.quota.write_refused', data: { state: 'Suspended' } });
        // A sponsored account's edit is judged on, and charged to, its sponsor's row.
        const payer = id('a000');
        const kid = id('a000');
        await sponsor(ports, kid, payer);
        const k = await stored(s, kid, hash(88), 5);
        await s.setSuspended(payer, 3_800);
        expect(
          await s.replaceMetadata({ assetId: k, accountId: kid, contentHash: hash(89), size: 6 }, p, 3_900),
        ).toMatchObject({ ok: false, code: 'error.quota.write_refused', data: { state: 'Suspended' } });
        await s.setSuspended(payer, null);
        expect(
          await s.replaceMetadata({ assetId: k, accountId: kid, contentHash: hash(89), size: 6 }, p, 3_900),
        ).toEqual(REPLACED);
        expect(await s.findBlob(hash(89))).toMatchObject({ size: 6, chargedTo: payer });
        expect(await s.readLedger(kid, 3_900)).toMatchObject({ charged: 0 });
      }));

    // The edit is decided where it is written: concurrent edits, over several connections, each see
    // the charges of those before them (on PostgreSQL they queue on the payer's quota row).
    it('concurrent follow-up metadata edits on several connections never take used past hard limit + overdraft', async () => {
      const { ports, connect, cleanup } = await setup();
      try {
        const stores = [ports.quota, ...(await Promise.all([connect(), connect(), connect()])).map((p) => p.quota)];
        const a = id('a000');
        const p: QuotaPolicy = { ...policy(1_000), followUpMs: 10_000, followUpOverdraft: 50 };
        const x = await stored(ports.quota, a, hash(100), 960);
        const live = [];
        for (let i = 0; i < 8; i++) live.push(await stored(ports.quota, a, hash(101 + i), 5));
        expect(await ports.quota.settleHardSince(a, p, 1_000)).toBe(1_000);
        expect(await ports.quota.trashAsset(x, 2_500)).toBe(true);
        // GraceExpired, used 1,000, a follow-up window open: 20-byte edits, two on each connection at once.
        const edits = await Promise.all(
          live.map((assetId, i) =>
            stores[i % stores.length]!.replaceMetadata(
              { assetId, accountId: a, contentHash: hash(120 + i), size: 20 },
              p,
              3_000,
            ),
          ),
        );
        expect(edits.filter((e) => e.ok)).toHaveLength(2);
        for (const e of edits)
          if (!e.ok) expect(e).toMatchObject({ code: 'error.quota.write_refused', data: { state: 'GraceExpired' } });
        expect(await ports.quota.readLedger(a, 3_000)).toMatchObject({ charged: 1_040, reserved: 0 });
        const written = await Promise.all(live.map((assetId) => ports.quota.findAsset(assetId)));
        expect(written.filter((w) => w!.blobs.some((b) => b.kind === 'metadata'))).toHaveLength(2);
      } finally {
        await cleanup?.();
      }
    });

    it("listTrash names the owner's trashed assets with their album; emptyTrash purges only those named that are the owner's and trashed", () =>
      using(setup, async (s) => {
        const [a, b] = [id('a000'), id('b000')];
        const album = id('f000');
        const inAlbum = upload(a, { declaredSize: 10, albumId: album });
        expect(await open(s, inAlbum, null, 1_000)).toBe('reserved');
        expect(
          outcome(
            await s.completeUpload(
              {
                uploadId: inAlbum.id,
                contentHash: hash(60),
                size: 10,
                asset: { create: { id: inAlbum.id, ownerId: a, dropExpiresAt: null } },
              },
              UNLIMITED,
              1_000,
            ),
          ),
        ).toBe('completed');
        const free = await stored(s, a, hash(61), 10);
        const live = await stored(s, a, hash(62), 10);
        const later = await stored(s, a, hash(63), 10);
        const theirs = await stored(s, b, hash(64), 10);
        for (const x of [inAlbum.id, free, theirs]) expect(await s.trashAsset(x, 2_000)).toBe(true);
        const listed = [
          { assetId: inAlbum.id, albumId: album },
          { assetId: free, albumId: null },
        ].sort((x, y) => (x.assetId < y.assetId ? -1 : 1));
        expect(await s.listTrash(a)).toEqual(listed);
        // Trashed after the list was read: not named, so it stays; a live asset and another owner's are never taken.
        expect(await s.trashAsset(later, 2_500)).toBe(true);
        expect(await s.emptyTrash(a, [inAlbum.id, free, live, theirs], 3_000)).toBe(2);
        expect(await s.findAsset(inAlbum.id)).toBeNull();
        expect(await s.findAsset(free)).toBeNull();
        expect(await s.findAsset(live)).toMatchObject({ state: 'live' });
        expect(await s.findAsset(later)).toMatchObject({ state: 'trashed' });
        expect(await s.findAsset(theirs)).toMatchObject({ state: 'trashed' });
        expect(await s.listTrash(a)).toEqual([{ assetId: later, albumId: null }]);
        expect(await s.emptyTrash(a, [], 3_000)).toBe(0);
      }));

    it("blobReferences: the owner's assets referencing a hash in any role and state, each once, with the original's album", () =>
      using(setup, async (s) => {
        const [a, b] = [id('a000'), id('b000')];
        const album = id('f000');
        const orig = upload(a, { declaredSize: 50, albumId: album });
        expect(await open(s, orig, null, 1_000)).toBe('reserved');
        expect(
          outcome(
            await s.completeUpload(
              {
                uploadId: orig.id,
                contentHash: hash(40),
                size: 50,
                asset: { create: { id: orig.id, ownerId: a, dropExpiresAt: null } },
              },
              UNLIMITED,
              1_000,
            ),
          ),
        ).toBe('completed');
        const x = orig.id;
        // A derivative of another hash, and the same hash again in a second role: one reference.
        const d = upload(a, { kind: 'derivative', declaredSize: 20 });
        await open(s, d, null, 1_000);
        expect(
          outcome(
            await s.completeUpload(
              { uploadId: d.id, contentHash: hash(41), size: 20, asset: { attachTo: x } },
              UNLIMITED,
              1_000,
            ),
          ),
        ).toBe('completed');
        const again = upload(a, { kind: 'provenance', declaredSize: 50 });
        await open(s, again, null, 1_000);
        expect(
          outcome(
            await s.completeUpload(
              { uploadId: again.id, contentHash: hash(40), size: 50, asset: { attachTo: x } },
              UNLIMITED,
              1_000,
            ),
          ),
        ).toBe('merged');
        expect(
          await s.replaceMetadata({ assetId: x, accountId: a, contentHash: hash(42), size: 5 }, UNLIMITED, 1_000),
        ).toEqual(REPLACED);
        // b holds the same bytes in an asset of its own, outside any album.
        const y = await stored(s, b, hash(40), 50);
        const ofA = { assetId: x, ownerId: a, state: 'live', albumId: album };
        expect(await s.blobReferences(hash(40), a)).toEqual([ofA]);
        expect(await s.blobReferences(hash(41), a)).toEqual([ofA]);
        expect(await s.blobReferences(hash(42), a)).toEqual([ofA]);
        expect(await s.blobReferences(hash(40), b)).toEqual([{ assetId: y, ownerId: b, state: 'live', albumId: null }]);
        expect(await s.blobReferences(hash(41), b)).toEqual([]);
        expect(await s.blobReferences(hash(43), a)).toEqual([]);
        // Two assets of one owner, ordered by id; trash keeps the reference, purge drops it.
        const z = await stored(s, b, hash(41), 20);
        expect(await s.blobReferences(hash(41), b)).toEqual([{ assetId: z, ownerId: b, state: 'live', albumId: null }]);
        expect(await s.trashAsset(x, 2_000)).toBe(true);
        expect(await s.blobReferences(hash(40), a)).toEqual([{ ...ofA, state: 'trashed' }]);
        expect(await s.purgeAsset(x, 2_000)).toBe(true);
        expect(await s.blobReferences(hash(40), a)).toEqual([]);
        expect(await s.blobReferences(hash(41), a)).toEqual([]);
        const w = await stored(s, b, hash(40), 50);
        expect((await s.blobReferences(hash(40), b)).map((r) => r.assetId)).toEqual([y, w].sort());
        // Pending drops (opened through a real upload link) are covered over HTTP: routes/blobs.test.ts.
      }));

    it('keeps limits, suspension, sponsor and hard_since', () =>
      using(setup, async (s, ports) => {
        const a = id('a000');
        const sp = id('a000');
        await s.setLimits(a, { soft: 10, hard: null });
        await s.setSuspended(a, 1_234);
        await sponsor(ports, a, sp);
        expect(await s.readLedger(a, 0)).toMatchObject({
          limits: { soft: 10, hard: null },
          suspendedAt: 1_234,
          sponsorId: sp,
        });
        await s.setLimits(a, null);
        await s.setSuspended(a, null);
        await sponsor(ports, a, null);
        expect(await s.readLedger(a, 0)).toMatchObject({ limits: null, suspendedAt: null, sponsorId: null });
        await open(s, upload(a, { declaredSize: 100 }), null, 1_000);
        expect(await s.settleHardSince(a, policy(100), 1_500)).toBe(1_500);
        expect(await s.settleHardSince(a, policy(100), 1_600)).toBe(1_500);
        expect((await s.readLedger(a, 1_600)).hardSince).toBe(1_500);
        expect(await s.settleHardSince(a, policy(101), 1_700)).toBeNull();
        expect(await s.settleHardSince(a, UNLIMITED, 1_700)).toBeNull();
        // The account's own limits win over the deployment's.
        await s.setLimits(a, { soft: null, hard: 50 });
        expect(await s.settleHardSince(a, UNLIMITED, 1_800)).toBe(1_800);
      }));

    it("charges a sponsored uploader's reservation to its sponsor, and settles hard_since in the same step", () =>
      using(setup, async (s, ports) => {
        const sponsorId = id('a000');
        const kid = id('a000');
        await sponsor(ports, kid, sponsorId);
        const u = upload(kid, { declaredSize: 600 });
        const opened = await s.openUpload(u, policy(1_000), 1_000);
        expect(opened).toEqual({ ok: true, value: { ...pending(u), payerId: sponsorId } });
        expect(await s.findUpload(u.id)).toMatchObject({ uploaderId: kid, payerId: sponsorId });
        expect(await s.readLedger(sponsorId, 1_000)).toMatchObject({ reserved: 600, hardSince: null });
        expect(await s.readLedger(kid, 1_000)).toMatchObject({ reserved: 0 });
        // Reaching the hard limit stamps hard_since in the creating transaction itself.
        expect(await open(s, upload(sponsorId, { declaredSize: 400 }), 1_000, 2_000)).toBe('reserved');
        expect((await s.readLedger(sponsorId, 2_000)).hardSince).toBe(2_000);
        expect(await open(s, upload(kid, { declaredSize: 1 }), 1_000, 2_000)).toBe('exceeded');
        // Cancelling drops below the limit and clears it, again in one step.
        expect(await s.cancelUpload(u.id, policy(1_000), 3_000)).toBe(true);
        expect(await s.readLedger(sponsorId, 3_000)).toMatchObject({ reserved: 400, hardSince: null });
      }));

    it('refuses uploads while suspended, writing nothing', () =>
      using(setup, async (s) => {
        const a = id('a000');
        await s.setSuspended(a, 500);
        const u = upload(a);
        const r = await s.openUpload(u, UNLIMITED, 1_000);
        expect(r.ok ? null : r.code).toBe('error.quota.write_refused');
        expect(await s.findUpload(u.id)).toBeNull();
        expect((await s.readLedger(a, 1_000)).reserved).toBe(0);
      }));

    it('finalize answers the session as stored and keeps hard_since in line with the charge', () =>
      using(setup, async (s) => {
        const a = id('a000');
        const u = upload(a, { declaredSize: 500 });
        await open(s, u, 400 + 500, 1_000);
        await s.markReceived(u.id, { size: 450, hash: hash(20) }, 1_000);
        const done = await s.completeUpload(
          {
            uploadId: u.id,
            contentHash: hash(20),
            size: 450,
            asset: { create: { id: u.id, ownerId: a, dropExpiresAt: null } },
          },
          policy(450),
          1_500,
        );
        expect(done).toEqual({
          outcome: 'completed',
          session: { ...pending(u), state: 'Completed', receivedSize: 450, receivedHash: hash(20), assetId: u.id },
        });
        expect(await s.findUpload(u.id)).toEqual((done as { session: UploadSessionRecord }).session);
        expect(await s.readLedger(a, 1_500)).toMatchObject({ charged: 450, reserved: 0, hardSince: 1_500 });
        // The sweep credits the bytes back and clears it.
        await s.trashAsset(u.id, 2_000);
        await s.purgeAsset(u.id, 2_000);
        await s.sweep(policy(450), 3_000);
        expect(await s.readLedger(a, 3_000)).toMatchObject({ charged: 0, hardSince: null });
      }));

    it('many concurrent creations for one account, over several connections, never exceed the hard limit', async () => {
      const { ports, connect, cleanup } = await setup();
      try {
        const a = id('a000');
        const stores = [ports.quota, ...(await Promise.all([connect(), connect(), connect()])).map((p) => p.quota)];
        const results = await Promise.all(
          Array.from({ length: 48 }, (_, i) =>
            open(stores[i % stores.length]!, upload(a, { declaredSize: 30 }), 1000, 1_000),
          ),
        );
        expect(results.filter((r) => r === 'reserved')).toHaveLength(33);
        expect((await ports.quota.readLedger(a, 1_000)).reserved).toBe(990);
      } finally {
        await cleanup?.();
      }
    });

    // A store may decide openings that arrive together as one group; the outcomes must be exactly
    // those of one at a time, in arrival order.
    it('openings asked together are decided in arrival order, each seeing the reservations before it', () =>
      using(setup, async (s, ports) => {
        const a = id('a000');
        const b = id('a000');
        const kid = id('a000');
        await sponsor(ports, kid, a);
        const sizes: [string, number][] = [
          [a, 300],
          [b, 600],
          [kid, 300],
          [a, 300],
          [kid, 200],
          [a, 100],
          [b, 400],
          [a, 1],
        ];
        const results = await Promise.all(
          sizes.map(([who, size]) => open(s, upload(who, { declaredSize: size }), 1000, 1_000)),
        );
        // a's family: 300 + 300 (kid) + 300 = 900; the kid's 200 would pass 1,000; 100 fits exactly; 1 no longer does.
        expect(results).toEqual([
          'reserved',
          'reserved',
          'reserved',
          'reserved',
          'exceeded',
          'reserved',
          'reserved',
          'exceeded',
        ]);
        expect((await s.readLedger(a, 1_000)).reserved).toBe(1_000);
        expect((await s.readLedger(b, 1_000)).reserved).toBe(1_000);
        expect((await s.readLedger(kid, 1_000)).reserved).toBe(0);
        // At the hard limit: hard_since stamped by the opening that reached it.
        expect((await s.readLedger(a, 1_000)).hardSince).toBe(1_000);
      }));

    it('openings asked together after sessions lapsed see the reservations released first', () =>
      using(setup, async (s) => {
        const a = id('a000');
        expect(await open(s, upload(a, { declaredSize: 900, expiresAt: 5_000 }), 1000, 1_000)).toBe('reserved');
        const later = () => open(s, upload(a, { declaredSize: 500, createdAt: 6_000, expiresAt: 20_000 }), 1000, 6_000);
        expect(await Promise.all([later(), later(), later()])).toEqual(['reserved', 'reserved', 'exceeded']);
        expect((await s.readLedger(a, 6_000)).reserved).toBe(1_000);
      }));

    it('an opening that cannot be written fails without taking an accepted neighbour or a counter with it', () =>
      using(setup, async (s) => {
        const a = id('a000');
        const first = upload(a, { declaredSize: 100 });
        expect(await open(s, first, 1000, 1_000)).toBe('reserved');
        // The same id again, asked together with a good one: the duplicate must not be stored.
        const outcomes = await Promise.allSettled([
          s.openUpload({ ...first }, policy(1000), 1_000),
          s.openUpload(upload(a, { declaredSize: 50 }), policy(1000), 1_000),
        ]);
        expect(
          outcomes[0]!.status === 'rejected' ||
            (outcomes[0] as PromiseFulfilledResult<{ ok: boolean }>).value.ok === false,
        ).toBe(true);
        const ledger = await s.readLedger(a, 1_000);
        // Nothing reserved for the duplicate; the neighbour either opened (and counts) or was refused with it.
        const neighbour =
          outcomes[1]!.status === 'fulfilled' && (outcomes[1] as PromiseFulfilledResult<{ ok: boolean }>).value.ok;
        expect(ledger.reserved).toBe(neighbour ? 150 : 100);
        expect((await s.findUpload(first.id))?.declaredSize).toBe(100);
      }));
  });
}

/** A session record as a sign-in would open it, `over` replacing fields. */
const session = (accountId: string, over: Partial<SessionRecord> = {}): SessionRecord => ({
  id: id('5e55'),
  accountId,
  tokenHash: hash(++n),
  cohortHash: null,
  createdAt: 1_000,
  refreshedAt: 1_000,
  lastUsedAt: 1_000,
  accessFloor: 1_000,
  closedAt: null,
  authenticatedAt: 1_000,
  ...over,
});

export function describeCensusContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'census', 'DeploymentCensus', () => {
    it('an empty deployment counts zero everywhere and lists no account', () =>
      using(setup, async (_s, ports) => {
        expect(await ports.census.listAccounts(null, 10)).toEqual([]);
        expect(await ports.census.countDeployment(censusBounds(5_000, { idleMs: 1_000, maxMs: 2_000 }))).toEqual({
          accounts: 0,
          openSessions: 0,
          charged: 0,
          reserved: 0,
          openUploads: 0,
          blobs: 0,
          blobBytes: 0,
        });
      }));

    it('lists every account in id order, a page at a time', () =>
      using(setup, async (_s, ports) => {
        const made = [
          testAccount('census'),
          testAccount('census'),
          testAccount('census', { address: null, addressKey: null, passwordHash: null }),
        ];
        for (const a of [made[2]!, made[0]!, made[1]!]) expect(await ports.accounts.createAccount(a)).toBe('created');
        expect(await ports.census.listAccounts(null, 10)).toEqual(made);
        expect(await ports.census.listAccounts(null, 2)).toEqual(made.slice(0, 2));
        expect(await ports.census.listAccounts(made[1]!.id, 2)).toEqual(made.slice(2));
        expect(await ports.census.listAccounts(made[2]!.id, 2)).toEqual([]);
      }));

    it("counts sessions open by core's bounds (both expiries at their exact instant), in-flight uploads, charges and blobs", () =>
      using(setup, async (s, ports) => {
        const a = testAccount('census');
        const b = testAccount('census');
        for (const x of [a, b]) expect(await ports.accounts.createAccount(x)).toBe('created');
        const policy = { idleMs: 1_000, maxMs: 5_000 };
        const now = 10_000;
        // Open: created after now - maxMs and refreshed after now - idleMs. Each expiry is reached at its instant.
        const counted = [
          session(a.id, { createdAt: now - 4_999, refreshedAt: now - 999 }),
          session(b.id, { createdAt: now - 100, refreshedAt: now - 100 }),
        ];
        const notCounted = [
          session(a.id, { createdAt: now - 5_000, refreshedAt: now - 10 }),
          session(a.id, { createdAt: now - 100, refreshedAt: now - 1_000 }),
        ];
        const closed = session(b.id, { createdAt: now - 10, refreshedAt: now - 10 });
        for (const x of [...counted, ...notCounted, closed])
          expect(await ports.accounts.openSession(x, null)).toBe(true);
        expect(await ports.accounts.closeSession(b.id, closed.id, now - 5)).toBe(true);

        await stored(s, a.id, hash(900_001), 300, now - 50);
        await stored(s, b.id, hash(900_002), 200, now - 50);
        // In flight until its expiry instant: one expiring later counts, one expiring exactly now does not.
        expect(
          await open(s, upload(a.id, { declaredSize: 40, createdAt: now - 10, expiresAt: now + 1 }), null, now - 10),
        ).toBe('reserved');
        expect(
          await open(s, upload(b.id, { declaredSize: 7, createdAt: now - 10, expiresAt: now }), null, now - 10),
        ).toBe('reserved');

        expect(await ports.census.countDeployment(censusBounds(now, policy))).toEqual({
          accounts: 2,
          openSessions: 2,
          charged: 500,
          reserved: 40,
          openUploads: 1,
          blobs: 2,
          blobBytes: 500,
        });
      }));
  });
}
