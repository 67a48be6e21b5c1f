import { describe, expect, it } from 'vitest';
import { decideAssetTransition, type AssetAction, type AssetLifecycleFacts } from './lifecycle.js';

const live: AssetLifecycleFacts = { state: 'live', trashedAt: null, dropExpiresAt: null };
const trashed: AssetLifecycleFacts = { state: 'trashed', trashedAt: 2_000, dropExpiresAt: null };
const drop: AssetLifecycleFacts = { state: 'pending_drop', trashedAt: null, dropExpiresAt: 5_000 };

describe('decideAssetTransition', () => {
  it('trash: only a live asset, stamped with the time', () => {
    expect(decideAssetTransition(live, { kind: 'trash', now: 3_000 })).toEqual({
      ok: true,
      write: 'update',
      next: { state: 'trashed', trashedAt: 3_000, dropExpiresAt: null },
    });
    expect(decideAssetTransition(trashed, { kind: 'trash', now: 3_000 })).toEqual({ ok: false, refusal: 'not_live' });
    expect(decideAssetTransition(drop, { kind: 'trash', now: 3_000 })).toEqual({ ok: false, refusal: 'not_live' });
  });

  it('restore: only a trashed asset, and the trash stamp is cleared', () => {
    expect(decideAssetTransition(trashed, { kind: 'restore' })).toEqual({
      ok: true,
      write: 'update',
      next: { state: 'live', trashedAt: null, dropExpiresAt: null },
    });
    expect(decideAssetTransition(live, { kind: 'restore' })).toEqual({ ok: false, refusal: 'not_trashed' });
    expect(decideAssetTransition(drop, { kind: 'restore' })).toEqual({ ok: false, refusal: 'not_trashed' });
  });

  it('purge: a trashed asset or a pending drop, never a live one', () => {
    expect(decideAssetTransition(trashed, { kind: 'purge' })).toEqual({ ok: true, write: 'delete' });
    expect(decideAssetTransition(drop, { kind: 'purge' })).toEqual({ ok: true, write: 'delete' });
    expect(decideAssetTransition(live, { kind: 'purge' })).toEqual({ ok: false, refusal: 'not_purgeable' });
  });

  it('emptying the trash takes trashed assets only (a pending drop is not in the trash)', () => {
    expect(decideAssetTransition(trashed, { kind: 'empty_trash' })).toEqual({ ok: true, write: 'delete' });
    expect(decideAssetTransition(drop, { kind: 'empty_trash' })).toEqual({ ok: false, refusal: 'not_trashed' });
    expect(decideAssetTransition(live, { kind: 'empty_trash' })).toEqual({ ok: false, refusal: 'not_trashed' });
  });

  it('adopt: a pending drop before its expiry (exclusive) becomes live and loses its expiry', () => {
    expect(decideAssetTransition(drop, { kind: 'adopt', now: 4_999 })).toEqual({
      ok: true,
      write: 'update',
      next: { state: 'live', trashedAt: null, dropExpiresAt: null },
    });
    expect(decideAssetTransition(drop, { kind: 'adopt', now: 5_000 })).toEqual({ ok: false, refusal: 'drop_expired' });
    expect(decideAssetTransition({ ...drop, dropExpiresAt: null }, { kind: 'adopt', now: 9e12 })).toMatchObject({
      ok: true,
    });
    expect(decideAssetTransition(live, { kind: 'adopt', now: 1 })).toEqual({ ok: false, refusal: 'not_pending_drop' });
    expect(decideAssetTransition(trashed, { kind: 'adopt', now: 1 })).toEqual({
      ok: false,
      refusal: 'not_pending_drop',
    });
  });

  it('discard deletes a pending drop only: an adopted (live) or trashed asset stays', () => {
    expect(decideAssetTransition(drop, { kind: 'discard' })).toEqual({ ok: true, write: 'delete' });
    expect(decideAssetTransition(live, { kind: 'discard' })).toEqual({ ok: false, refusal: 'not_pending_drop' });
    expect(decideAssetTransition(trashed, { kind: 'discard' })).toEqual({ ok: false, refusal: 'not_pending_drop' });
  });

  it('a missing row (purged, or taken by a racing call) refuses every action', () => {
    const actions: AssetAction[] = [
      { kind: 'trash', now: 1 },
      { kind: 'restore' },
      { kind: 'purge' },
      { kind: 'empty_trash' },
      { kind: 'discard' },
      { kind: 'adopt', now: 1 },
    ];
    for (const a of actions) expect(decideAssetTransition(null, a)).toEqual({ ok: false, refusal: 'missing' });
  });
});

describe('EMPTY_TRASH_CANDIDATE_STATES', () => {
  it('is what the rule accepts for empty_trash: the trash only', async () => {
    const { EMPTY_TRASH_CANDIDATE_STATES } = await import('./lifecycle.js');
    expect(EMPTY_TRASH_CANDIDATE_STATES).toEqual(['trashed']);
  });
});
