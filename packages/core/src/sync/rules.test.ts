import { describe, expect, it } from 'vitest';
import { testSecretBox } from '../testing/secret-box.js';
import { assetChanges, linkChanges } from './changes.js';
import { openLinkCursor, openSyncCursor, sealLinkCursor, sealSyncCursor } from './cursor.js';
import { cursorExpired, planSyncPage, tombstoneHorizon } from './page.js';

const DAY = 86_400_000;

describe('which changes a write records', () => {
  const cases: [string, Parameters<typeof assetChanges>, string[]][] = [
    ['an original finalized into an album', ['x', 'al', null, 'live'], ['asset:upsert:x', 'album:upsert:al']],
    ['a guest drop (not in the library until adopted)', ['x', 'al', null, 'pending_drop'], []],
    ['a drop discarded', ['x', 'al', 'pending_drop', null], []],
    ['a drop adopted', ['x', 'al', 'pending_drop', 'live'], ['asset:upsert:x', 'album:upsert:al']],
    ['a trash', ['x', 'al', 'live', 'trashed'], ['asset:upsert:x', 'album:upsert:al']],
    ['a restore', ['x', 'al', 'trashed', 'live'], ['asset:upsert:x', 'album:upsert:al']],
    ['a purge from the trash', ['x', 'al', 'trashed', null], ['asset:remove:x']],
    ['a blob added or the metadata replaced', ['x', 'al', 'live', 'live'], ['asset:upsert:x']],
    ['a trash outside any album', ['x', null, 'live', 'trashed'], ['asset:upsert:x']],
  ];
  it.each(cases)('%s', (_what, args, want) => {
    expect(assetChanges(...args).map((c) => `${c.kind}:${c.op}:${c.objectId}`)).toEqual(want);
  });
  it('a link: created is an upsert, revoked a removal', () => {
    expect(linkChanges('h', false)).toEqual([{ kind: 'link', objectId: 'h', op: 'upsert' }]);
    expect(linkChanges('h', true)).toEqual([{ kind: 'link', objectId: 'h', op: 'remove' }]);
  });
});

describe('cursors', () => {
  it('open only for the account (or link) they were sealed for, and not once altered', async () => {
    const box = testSecretBox();
    const sealed = await sealSyncCursor(box, 'a', { seq: 7, issuedAt: 1_000, floor: 3 });
    expect(await openSyncCursor(box, 'a', sealed)).toEqual({ seq: 7, issuedAt: 1_000, floor: 3 });
    expect(await openSyncCursor(box, 'b', sealed)).toBeNull();
    expect(await openSyncCursor(box, 'a', `${sealed.slice(0, -1)}${sealed.endsWith('A') ? 'B' : 'A'}`)).toBeNull();
    expect(await openSyncCursor(box, 'a', 'garbage')).toBeNull();
    const link = await sealLinkCursor(box, 'h1', 'asset-9');
    expect(await openLinkCursor(box, 'h1', link)).toBe('asset-9');
    expect(await openLinkCursor(box, 'h2', link)).toBeNull();
    // A link cursor is not a sync cursor, even under the same key.
    expect(await openSyncCursor(box, 'h1', link)).toBeNull();
  });

  it('expire past the horizon, or when a removal past both their position and their floor was pruned', () => {
    const now = 100 * DAY;
    const at = { seq: 10, issuedAt: tombstoneHorizon(now, 90), floor: 4 };
    expect(cursorExpired(at, 0, now, 90)).toBe(false);
    expect(cursorExpired({ ...at, issuedAt: at.issuedAt - 1 }, 0, now, 90)).toBe(true);
    expect(cursorExpired(at, 10, now, 90)).toBe(false);
    expect(cursorExpired(at, 11, now, 90)).toBe(true);
    expect(cursorExpired({ ...at, seq: 2 }, 4, now, 90)).toBe(false);
    expect(cursorExpired({ ...at, seq: 2 }, 5, now, 90)).toBe(true);
  });
});

describe('a page', () => {
  const read = {
    entries: [
      { kind: 'asset' as const, objectId: 'x', op: 'upsert' as const, seq: 3, at: 1 },
      { kind: 'asset' as const, objectId: 'y', op: 'remove' as const, seq: 4, at: 1 },
      { kind: 'album' as const, objectId: 'al', op: 'upsert' as const, seq: 6, at: 1 },
    ],
    prunedThrough: 2,
    head: 6,
    assets: [
      {
        id: 'x',
        ownerId: 'a',
        uploaderId: 'a',
        state: 'live' as const,
        createdAt: 1,
        trashedAt: null,
        dropExpiresAt: null,
        blobs: [],
        albumId: null,
        updatedAt: 1,
      },
    ],
    albums: [],
    links: [],
  };
  it('a first listing leaves removals out and starts its floor at the head it read', () => {
    const plan = planSyncPage(read, null, 2);
    expect(plan.changes.map((c) => `${c.kind}:${c.op}:${c.id}`)).toEqual(['asset:upsert:x']);
    expect(plan).toMatchObject({ seq: 4, floor: 6, hasMore: true });
  });
  it('a later page keeps removals, carries the floor, and an upsert whose object is gone reads as a removal', () => {
    const plan = planSyncPage(read, { seq: 2, issuedAt: 0, floor: 1 }, 10);
    expect(plan.changes.map((c) => `${c.kind}:${c.op}:${c.id}`)).toEqual([
      'asset:upsert:x',
      'asset:remove:y',
      'album:remove:al',
    ]);
    expect(plan).toMatchObject({ seq: 6, floor: 1, hasMore: false });
  });
  it('an empty page keeps the position', () => {
    expect(planSyncPage({ ...read, entries: [] }, { seq: 9, issuedAt: 0, floor: 1 }, 10)).toMatchObject({
      changes: [],
      seq: 9,
      floor: 1,
      hasMore: false,
    });
  });
});
