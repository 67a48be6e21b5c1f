import { expect, it } from 'vitest';
import {
  tombstonePruned,
  type LinkRecord,
  type NewUpload,
  type Ports,
  type QuotaPolicy,
  type SyncRead,
} from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { testAccount } from './fixtures.js';
import { describeContract } from './registry.js';

let n = 0;
const id = (prefix: string): string => `0190${prefix}-0000-7000-8000-${String(++n).padStart(12, '0')}`;
const hash = (i: number): string => i.toString(16).padStart(64, '0');
const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: null },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 1_000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};

async function using(setup: Setup, body: (ports: Ports) => Promise<void>): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    await body(ports);
  } finally {
    await cleanup?.();
  }
}

async function account(ports: Ports): Promise<string> {
  const a = testAccount('sync');
  await ports.accounts.createAccount(a);
  return a.id;
}

async function album(ports: Ports, accountId: string, at: number): Promise<string> {
  const albumId = id('a1b0');
  await ports.albums.createAlbum({
    id: albumId,
    accountId,
    protocolVersion: '2025-01-01',
    createdAt: at,
    upgrade: null,
  });
  return albumId;
}

/** A finished original of `ownerId` (in `albumId`, if any) at `at`; its id. */
async function asset(ports: Ports, ownerId: string, albumId: string | null, h: number, at: number): Promise<string> {
  const u: NewUpload = {
    id: id('a55e'),
    uploaderId: ownerId,
    kind: 'original',
    declaredSize: 10,
    contentHash: null,
    sourcePeer: null,
    albumId,
    intentId: null,
    dropLinkIdHash: null,
    createdAt: at,
    expiresAt: at + 60_000,
  };
  expect((await ports.quota.openUpload(u, POLICY, at)).ok).toBe(true);
  const done = await ports.quota.completeUpload(
    { uploadId: u.id, contentHash: hash(h), size: 10, asset: { create: { id: u.id, ownerId, dropExpiresAt: null } } },
    POLICY,
    at,
  );
  expect(typeof done === 'string' ? done : done.outcome).toBe('completed');
  return u.id;
}

function shareLink(ownerId: string, albumId: string, at: number): LinkRecord {
  return {
    idHash: hash(++n),
    sealedId: 'v1.sealed.id',
    ownerId,
    kind: 'share',
    albumId,
    assetIds: [],
    wrappedKey: 'a2V5',
    sealKey: null,
    maxBytes: null,
    acceptedBytes: 0,
    createdAt: at,
    expiresAt: null,
    revokedAt: null,
  };
}

const shape = (r: SyncRead) => r.entries.map((e) => `${e.kind}:${e.op}@${e.seq}`);

export function describeSyncLogContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'sync', 'SyncLog', () => {
    it("records each write's changes under the account's next numbers, keeps one entry per object and reads a page with its objects", () =>
      using(setup, async (ports) => {
        const a = await account(ports);
        const albumId = await album(ports, a, 1_000);
        expect(shape(await ports.sync.readSync(a, 0, 10))).toEqual(['album:upsert@1']);
        const x = await asset(ports, a, albumId, 1, 2_000);
        // The asset's creation moved the album's count: the album's entry moves after it.
        expect(shape(await ports.sync.readSync(a, 0, 10))).toEqual(['asset:upsert@2', 'album:upsert@3']);
        const link = shareLink(a, albumId, 3_000);
        await ports.links.createLink(link);
        expect(await ports.quota.trashAsset(x, 4_000)).toBe(true);
        const page = await ports.sync.readSync(a, 0, 10);
        expect(shape(page)).toEqual(['link:upsert@4', 'asset:upsert@5', 'album:upsert@6']);
        expect(page.prunedThrough).toBe(0);
        expect(page.assets).toMatchObject([
          {
            id: x,
            ownerId: a,
            state: 'trashed',
            albumId,
            createdAt: 2_000,
            updatedAt: 4_000,
            blobs: [{ kind: 'original', contentHash: hash(1), size: 10 }],
          },
        ]);
        expect(page.albums).toEqual([
          { id: albumId, accountId: a, protocolVersion: '2025-01-01', createdAt: 1_000, assetCount: 0 },
        ]);
        expect(page.links.map((l) => l.idHash)).toEqual([link.idHash]);
        // A range after a position, and a limit.
        expect(shape(await ports.sync.readSync(a, 4, 1))).toEqual(['asset:upsert@5']);
        expect(shape(await ports.sync.readSync(a, 6, 10))).toEqual([]);
      }));

    it('purges, revocations and restores are recorded; a refused step records nothing; other accounts are apart', () =>
      using(setup, async (ports) => {
        const [a, b] = [await account(ports), await account(ports)];
        const albumId = await album(ports, a, 1_000);
        const x = await asset(ports, a, albumId, 2, 1_100);
        const y = await asset(ports, a, null, 3, 1_200);
        const link = shareLink(a, albumId, 1_300);
        await ports.links.createLink(link);
        const head = (await ports.sync.readSync(a, 0, 100)).entries.at(-1)!.seq;
        expect(await ports.quota.restoreAsset(x, 1_400)).toBe(false);
        expect(await ports.quota.trashAsset(y, 1_500)).toBe(true);
        expect(await ports.quota.purgeAsset(y, 1_600)).toBe(true);
        expect((await ports.quota.revokeLink(a, link.idHash, POLICY, 1_700)).revoked).toBe(true);
        expect(await ports.quota.trashAsset(x, 1_800)).toBe(true);
        expect(await ports.quota.restoreAsset(x, 1_900)).toBe(true);
        const page = await ports.sync.readSync(a, head, 100);
        expect(page.entries.map((e) => `${e.kind}:${e.op}`)).toEqual([
          'asset:remove',
          'link:remove',
          'asset:upsert',
          'album:upsert',
        ]);
        expect(page.entries.map((e) => e.seq)).toEqual([head + 2, head + 3, head + 6, head + 7]);
        expect(page.entries[0]).toMatchObject({ objectId: y, at: 1_600 });
        expect(page.albums[0]!.assetCount).toBe(1);
        expect((await ports.sync.readSync(b, 0, 100)).entries).toEqual([]);
      }));

    it("prunes exactly the entries core's TOMBSTONE_PRUNED takes at the horizon", () =>
      using(setup, async (ports) => {
        const a = await account(ports);
        const before = 3_000;
        // Removals written just before, at and after the horizon, and an asset that stays.
        for (const [i, at] of [before - 1, before, before + 1].entries()) {
          const x = await asset(ports, a, null, 10 + i, 1_000);
          await ports.quota.trashAsset(x, at);
          await ports.quota.purgeAsset(x, at);
        }
        await asset(ports, a, null, 20, 1_000);
        const entries = (await ports.sync.readSync(a, 0, 100)).entries;
        // The expectation is core's filter, pinned: only the removal written before the horizon goes.
        const pruned = entries.filter((e) => tombstonePruned(e, before));
        expect(pruned.map((e) => [e.op, e.at])).toEqual([['remove', before - 1]]);
        expect(await ports.sync.pruneSyncTombstones(before)).toBe(pruned.length);
        const page = await ports.sync.readSync(a, 0, 100);
        expect(page.entries).toEqual(entries.filter((e) => !pruned.includes(e)));
        expect(page.prunedThrough).toBe(pruned[0]!.seq);
      }));

    it('prunes tombstones older than the horizon and raises prunedThrough; upserts stay', () =>
      using(setup, async (ports) => {
        const a = await account(ports);
        const x = await asset(ports, a, null, 4, 1_000);
        const y = await asset(ports, a, null, 5, 1_000);
        await ports.quota.trashAsset(x, 2_000);
        await ports.quota.purgeAsset(x, 2_000);
        await ports.quota.trashAsset(y, 5_000);
        await ports.quota.purgeAsset(y, 5_000);
        expect(await ports.sync.pruneSyncTombstones(3_000)).toBeGreaterThanOrEqual(1);
        const page = await ports.sync.readSync(a, 0, 100);
        expect(page.entries.map((e) => `${e.kind}:${e.op}@${e.seq}`)).toEqual(['asset:remove@6']);
        expect(page.prunedThrough).toBe(4);
      }));

    it('a link an earlier build stored in clear keeps its entry when it moves to its hash; the clear key leaves the log', () =>
      using(setup, async (ports) => {
        const a = await account(ports);
        const albumId = await album(ports, a, 1_000);
        const clear = { ...shareLink(a, albumId, 2_000), sealedId: null };
        await ports.links.createLink(clear);
        const before = await ports.sync.readSync(a, 0, 10);
        const to = { idHash: hash(++n), sealedId: 'v1.moved.sealed' };
        expect(await ports.quota.rekeyLink(clear.idHash, to)).toBe(true);
        const after = await ports.sync.readSync(a, 0, 10);
        expect(after.entries.map((e) => [e.kind, e.objectId, e.seq])).toEqual(
          before.entries.map((e) => [e.kind, e.kind === 'link' ? to.idHash : e.objectId, e.seq]),
        );
        expect(after.links.map((l) => l.idHash)).toEqual([to.idHash]);
      }));

    it('views: an asset with its album and last change, an album with its count, the albums of an account, the assets of an album', () =>
      using(setup, async (ports) => {
        const [a, b] = [await account(ports), await account(ports)];
        const first = await album(ports, a, 1_000);
        const second = await album(ports, a, 1_001);
        await album(ports, b, 1_002);
        const x = await asset(ports, a, first, 6, 2_000);
        const y = await asset(ports, a, first, 7, 2_001);
        const z = await asset(ports, a, null, 8, 2_002);
        await ports.quota.trashAsset(y, 3_000);
        expect(await ports.sync.findAssetView(x)).toMatchObject({
          id: x,
          albumId: first,
          updatedAt: 2_000,
          state: 'live',
        });
        expect(await ports.sync.findAssetView(z)).toMatchObject({ id: z, albumId: null });
        expect(await ports.sync.findAssetView(id('0000'))).toBeNull();
        expect((await ports.sync.findAssetViews([z, x, id('0000'), x])).map((v) => v.id)).toEqual([x, z].sort());
        expect((await ports.sync.listAlbums(a)).map((v) => [v.id, v.assetCount])).toEqual([
          [first, 1],
          [second, 0],
        ]);
        expect(await ports.sync.findAlbumView(second)).toEqual({
          id: second,
          accountId: a,
          protocolVersion: '2025-01-01',
          createdAt: 1_001,
          assetCount: 0,
        });
        expect(await ports.sync.findAlbumView(id('0000'))).toBeNull();
        expect((await ports.sync.listAlbumAssets(a, first, ['live'], null, 10)).map((v) => v.id)).toEqual([x]);
        expect((await ports.sync.listAlbumAssets(a, first, ['live', 'trashed'], null, 10)).map((v) => v.id)).toEqual(
          [x, y].sort(),
        );
        expect(
          (await ports.sync.listAlbumAssets(a, first, ['live', 'trashed'], [x, y].sort()[0]!, 10)).map((v) => v.id),
        ).toEqual([[x, y].sort()[1]]);
        expect(await ports.sync.listAlbumAssets(b, first, ['live'], null, 10)).toEqual([]);
      }));
  });
}
