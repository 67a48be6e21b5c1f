import { describe, expect, it } from 'vitest';
import { decideAssetTransition } from '../assets/lifecycle.js';
import { handleInService } from '../discovery/rules.js';
import {
  accountState,
  cancelledByErasure,
  decideDeletionCaller,
  isLiveAccount,
  planErasure,
  revokedByErasure,
} from './rules.js';

describe('planErasure', () => {
  it('deletes the account and the sponsored accounts it sponsors; registered payees pay for themselves again', () => {
    expect(
      planErasure({
        accountId: 'a',
        account: 'live',
        sponsoredAccounts: ['k2', 'k1', 'k1'],
        ledgerPayees: ['k1', 'k2', 'payee'],
      }),
    ).toEqual({
      ok: true,
      value: { accounts: ['a', 'k1', 'k2'], unsponsor: ['payee'] },
    });
  });
  it('lists the registered payees to unsponsor in order, whatever order the store gave them', () => {
    expect(
      planErasure({ accountId: 'a', account: 'live', sponsoredAccounts: [], ledgerPayees: ['zed', 'bea', 'zed'] }),
    ).toEqual({ ok: true, value: { accounts: ['a'], unsponsor: ['bea', 'zed'] } });
  });
  it('tells a missing account from a deleted one and a live one', () => {
    expect(accountState(null)).toBe('missing');
    expect(accountState({ deletedAt: 5 })).toBe('deleted');
    expect(accountState({ deletedAt: null })).toBe('live');
    expect(isLiveAccount({ deletedAt: 5 })).toBe(false);
    expect(isLiveAccount({ deletedAt: null })).toBe(true);
  });
  it('refuses an account that does not exist; deletes one deleted already again, with what was left', () => {
    expect(
      planErasure({ accountId: 'a', account: 'missing', sponsoredAccounts: ['k'], ledgerPayees: [] }),
    ).toMatchObject({ ok: false, code: 'error.not_found' });
    expect(planErasure({ accountId: 'a', account: 'deleted', sponsoredAccounts: ['late'], ledgerPayees: [] })).toEqual({
      ok: true,
      value: { accounts: ['a', 'late'], unsponsor: [] },
    });
  });
});

describe('what a deletion ends', () => {
  const erased = new Set(['gone']);
  it('cancels every session still open that a deleted account uploads or pays for, lapsed ones too', () => {
    for (const state of ['Pending', 'Uploading', 'WaitingForProcessing'] as const) {
      expect(cancelledByErasure({ state, uploaderId: 'gone', payerId: 'gone' }, erased)).toBe(true);
      expect(cancelledByErasure({ state, uploaderId: 'kid', payerId: 'gone' }, erased)).toBe(true);
      expect(cancelledByErasure({ state, uploaderId: 'gone', payerId: 'sponsor' }, erased)).toBe(true);
      expect(cancelledByErasure({ state, uploaderId: 'other', payerId: 'other' }, erased)).toBe(false);
    }
    for (const state of ['Completed', 'Merged', 'Cancelled', 'Expired'] as const)
      expect(cancelledByErasure({ state, uploaderId: 'gone', payerId: 'gone' }, erased)).toBe(false);
  });
  it('revokes the live capability tokens minted for a deleted account, and no other', () => {
    expect(revokedByErasure({ accountId: 'gone', expiresAt: 11, revokedAt: null }, erased, 10)).toBe(true);
    expect(revokedByErasure({ accountId: 'gone', expiresAt: 10, revokedAt: null }, erased, 10)).toBe(false);
    expect(revokedByErasure({ accountId: 'gone', expiresAt: 11, revokedAt: 5 }, erased, 10)).toBe(false);
    expect(revokedByErasure({ accountId: 'other', expiresAt: 11, revokedAt: null }, erased, 10)).toBe(false);
    expect(revokedByErasure({ accountId: null, expiresAt: 11, revokedAt: null }, erased, 10)).toBe(false);
  });
  it('erases an asset in every state, where a purge refuses a live one', () => {
    for (const state of ['live', 'trashed', 'pending_drop'] as const) {
      expect(decideAssetTransition({ state, trashedAt: null, dropExpiresAt: null }, { kind: 'erase' })).toEqual({
        ok: true,
        write: 'delete',
      });
    }
    expect(decideAssetTransition(null, { kind: 'erase' })).toMatchObject({ ok: false, refusal: 'missing' });
  });
  it('a retired handle answers no lookup; a live one does', () => {
    expect(handleInService({ user: 'ann', retiredAt: 5 })).toBeNull();
    expect(handleInService({ user: 'ann', retiredAt: null })).toEqual({ user: 'ann', retiredAt: null });
    expect(handleInService(null)).toBeNull();
  });
});

describe('decideDeletionCaller', () => {
  const record = { accountId: 'kid', sponsorId: 'sponsor', createdAt: 0, owners: ['sponsor', 'co'] };
  it('an account deletes itself; acting as a sponsored account, only its sponsor deletes it', () => {
    expect(decideDeletionCaller({ accountId: 'me' }, null)).toEqual({ ok: true, value: undefined });
    expect(decideDeletionCaller({ accountId: 'kid', actingOwnerId: 'sponsor' }, record)).toEqual({
      ok: true,
      value: undefined,
    });
    expect(decideDeletionCaller({ accountId: 'kid', actingOwnerId: 'co' }, record)).toMatchObject({
      ok: false,
      code: 'error.auth.not_an_owner',
    });
    expect(decideDeletionCaller({ accountId: 'kid', actingOwnerId: 'sponsor' }, null)).toMatchObject({
      ok: false,
      code: 'error.auth.not_an_owner',
    });
    expect(decideDeletionCaller({ accountId: 'me', guestUploadId: 'u' }, null)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
  });
});

describe('what a deletion refuses, and what it leaves out', () => {
  const record = { accountId: 'kid', sponsorId: 'sponsor', createdAt: 0, owners: ['sponsor', 'co'] };
  it('says why it refuses a missing account, a guest and anyone but the sponsor', () => {
    expect(planErasure({ accountId: 'a', account: 'missing', sponsoredAccounts: [], ledgerPayees: [] })).toEqual({
      ok: false,
      code: 'error.not_found',
      detail: 'No such account.',
    });
    expect(decideDeletionCaller({ accountId: 'me', guestUploadId: 'u' }, null)).toEqual({
      ok: false,
      code: 'error.auth.session_invalid',
      detail: 'A guest upload token deletes nothing.',
    });
    expect(decideDeletionCaller({ accountId: 'kid', actingOwnerId: 'co' }, record)).toEqual({
      ok: false,
      code: 'error.auth.not_an_owner',
      detail: 'Only the sponsor of a sponsored account may delete it.',
    });
  });
  it("the sponsor acting as one sponsored account deletes only that one, not another's record", () => {
    expect(decideDeletionCaller({ accountId: 'other-kid', actingOwnerId: 'sponsor' }, record)).toMatchObject({
      ok: false,
      code: 'error.auth.not_an_owner',
    });
  });
  it('lists the account once, first, even when a store names it among its own sponsored accounts', () => {
    expect(
      planErasure({ accountId: 'a', account: 'live', sponsoredAccounts: ['a', 'k'], ledgerPayees: ['a'] }),
    ).toEqual({
      ok: true,
      value: { accounts: ['a', 'k'], unsponsor: [] },
    });
  });
});
