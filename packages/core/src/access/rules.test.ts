import { describe, expect, it } from 'vitest';
import {
  decideLookup,
  mayActForAccount,
  mayReach,
  reach,
  type Accessor,
  type ObjectKind,
  type Reachable,
} from './rules.js';

/**
 * Alice sponsors S and S2 and added Bob as an owner of S. After act-as resolution Bob acting as S is
 * the principal {accountId: S, actingOwnerId: Bob}; Alice acting as nobody is {accountId: Alice}.
 */
const ALICE = 'alice';
const BOB = 'bob';
const S = 'sponsored-s';
const S2 = 'sponsored-s2';
const KINDS: ObjectKind[] = ['asset', 'upload', 'federated_fill', 'album', 'link', 'drop', 'directory', 'session'];

const alice: Accessor = { accountId: ALICE };
const bobAsS = { accountId: S, actingOwnerId: BOB } as Accessor;
const aliceAsS = { accountId: S, actingOwnerId: ALICE } as Accessor;
const bob: Accessor = { accountId: BOB };
const nobody: Accessor = { accountId: '' };
const guest: Accessor = { accountId: ALICE, guestUploadId: 'drop-1' };

const of = (kind: ObjectKind, accountId: string, id = `${kind}-1`): Reachable => ({ kind, id, accountId });

describe('mayReach: the object belongs to the account the request acts as', () => {
  for (const kind of KINDS) {
    it(`${kind}: the owner reaches its own, to read and to write`, () => {
      expect(mayReach(alice, of(kind, ALICE), 'read')).toBe(true);
      expect(mayReach(alice, of(kind, ALICE), 'write')).toBe(true);
      expect(mayReach(bobAsS, of(kind, S), 'write')).toBe(true);
      expect(mayReach(aliceAsS, of(kind, S), 'read')).toBe(true);
    });
    it(`${kind}: a co-owner acting as S reaches neither the sponsor's own nor a sibling's`, () => {
      for (const action of ['read', 'write'] as const) {
        expect(mayReach(bobAsS, of(kind, ALICE), action)).toBe(false);
        expect(mayReach(bobAsS, of(kind, S2), action)).toBe(false);
        expect(mayReach(bobAsS, of(kind, BOB), action)).toBe(false);
      }
    });
    it(`${kind}: the sponsor without act-as reaches none of S's; another account none of Alice's`, () => {
      for (const action of ['read', 'write', 'send'] as const) {
        expect(mayReach(alice, of(kind, S), action)).toBe(false);
        expect(mayReach(bob, of(kind, ALICE), action)).toBe(false);
        expect(mayReach(nobody, of(kind, ''), action)).toBe(false);
        expect(mayReach(nobody, of(kind, ALICE), action)).toBe(false);
      }
    });
  }

  it('a guest sends its own drop, and does nothing else', () => {
    expect(mayReach(guest, of('upload', ALICE, 'drop-1'), 'send')).toBe(true);
    expect(mayReach(guest, of('upload', ALICE, 'drop-1'), 'read')).toBe(false);
    expect(mayReach(guest, of('upload', ALICE, 'drop-1'), 'write')).toBe(false);
    // Another upload of the link's owner, a federated fill under the same id, any other object.
    expect(mayReach(guest, of('upload', ALICE, 'drop-2'), 'send')).toBe(false);
    expect(mayReach(guest, of('federated_fill', ALICE, 'drop-1'), 'send')).toBe(false);
    for (const kind of KINDS.filter((k) => k !== 'upload'))
      expect(mayReach(guest, of(kind, ALICE, 'drop-1'), 'send')).toBe(false);
    // Its own drop's id under another account (cannot happen, but the account still decides).
    expect(mayReach(guest, of('upload', BOB, 'drop-1'), 'send')).toBe(false);
  });

  it('reach answers the object or the 404 that "no object" also gets', () => {
    const mine = of('asset', ALICE);
    expect(reach(alice, mine, 'read')).toEqual({ ok: true, value: mine });
    const refused = reach(bobAsS, mine, 'read', 'No such asset.');
    const missing = reach(bobAsS, null, 'read', 'No such asset.');
    expect(refused).toEqual(missing);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.code).toBe('error.not_found');
  });

  it('reach refuses with "No such object." unless the caller names the object', () => {
    expect(reach(bob, of('asset', ALICE), 'read')).toEqual({
      ok: false,
      code: 'error.not_found',
      detail: 'No such object.',
    });
  });
});

describe('mayActForAccount', () => {
  it('an account or an owner acting as one opens objects; a guest and nobody cannot', () => {
    expect(mayActForAccount(alice)).toBe(true);
    expect(mayActForAccount(bobAsS)).toBe(true);
    expect(mayActForAccount(guest)).toBe(false);
    expect(mayActForAccount(nobody)).toBe(false);
  });
});

describe('decideLookup: a peer token never relays onward', () => {
  it('a local handle is answered for anyone who may look', () => {
    expect(decideLookup({ kind: 'local' }, true)).toEqual({ ok: true, value: 'local' });
    expect(decideLookup({ kind: 'peer' }, true)).toEqual({ ok: true, value: 'local' });
  });
  it("another host's handle is forwarded for a local account only", () => {
    expect(decideLookup({ kind: 'local' }, false)).toEqual({ ok: true, value: 'forward' });
    // The same answer as a handle nobody holds: the peer learns nothing of where it lives.
    expect(decideLookup({ kind: 'peer' }, false)).toEqual({
      ok: false,
      code: 'error.not_found',
      detail: 'No account has this handle.',
    });
  });
});
