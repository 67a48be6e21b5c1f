import { expect, it } from 'vitest';
import {
  type AccountRecord,
  closedByCredentialChange,
  closedByPasswordChange,
  type SessionRecord,
} from '@strongroom/core';
import { describeContract } from './registry.js';
import { testAccount } from './fixtures.js';

import type { Ports } from '@strongroom/core';

/** Makes a fresh, empty set of stores for one test; `cleanup` releases it. */
/**
 * Makes a fresh, empty set of stores for one test; `cleanup` releases it. `connect` opens another
 * port set on the same database over its own connection (the same objects where the adapter has
 * only one, as memory and PGlite do), so concurrency contracts race real connections.
 */
export type Setup = () => Promise<{
  ports: Ports;
  connect: () => Promise<Ports>;
  cleanup?: () => Promise<void> | void;
}>;

/**
 * Opens a session as a sign-in would: judged against the account's credentials as they stand now
 * (SessionLedger.openSession), and expected to open.
 */
async function insertSession(
  s: Pick<Ports['accounts'], 'findAccountById' | 'openSession'>,
  x: SessionRecord,
): Promise<void> {
  const a = await s.findAccountById(x.accountId);
  expect(await s.openSession(x, a?.credentialsChangedAt ?? null)).toBe(true);
}

let n = 0;
// Registered as typed, mixed case and all: the key is its lower-case form.
const account = (over: Partial<AccountRecord> = {}): AccountRecord => testAccount('User', over);
function session(accountId: string, over: Partial<SessionRecord> = {}): SessionRecord {
  n++;
  return {
    id: `0190b000-0000-7000-8000-${String(n).padStart(12, '0')}`,
    accountId,
    tokenHash: n.toString(16).padStart(64, '0'),
    cohortHash: null,
    createdAt: 1_000,
    refreshedAt: 1_000,
    lastUsedAt: 1_000,
    accessFloor: 1_000,
    closedAt: null,
    method: 'password',
    authenticatedAt: 1_000,
    ...over,
  };
}

async function using(setup: Setup, body: (store: Ports['accounts']) => Promise<void>): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    await body(ports.accounts);
  } finally {
    await cleanup?.();
  }
}

export function describeAccountStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'accounts', 'AccountStore', () => {
    it('creates once per address key and finds by key and id', () =>
      using(setup, async (s) => {
        const a = account();
        expect(await s.createAccount(a)).toBe('created');
        expect(await s.createAccount({ ...account(), addressKey: a.addressKey })).toBe('address_taken');
        expect(await s.findAccountByAddress(a.addressKey!)).toEqual(a);
        expect(await s.findAccountById(a.id)).toEqual(a);
        expect(await s.findAccountById('0190a000-0000-7000-8000-ffffffffffff')).toBeNull();
        expect(await s.findAccountByAddress('nobody@example.org')).toBeNull();
      }));
    it('sets and clears the display name and the lock', () =>
      using(setup, async (s) => {
        const a = account();
        await s.createAccount(a);
        expect((await s.setDisplayName(a.id, 'Ada'))?.displayName).toBe('Ada');
        expect((await s.setDisplayName(a.id, null))?.displayName).toBeNull();
        expect(await s.setDisplayName('0190a000-0000-7000-8000-ffffffffffff', 'x')).toBeNull();
        expect(await s.setLocked(a.id, 5)).toBe(true);
        expect((await s.findAccountById(a.id))?.lockedAt).toBe(5);
      }));
    it('a lock, a password change and revoke-all stamp the credential change in the same step; unlocking does not', () =>
      using(setup, async (s) => {
        const a = account();
        const b = account();
        await s.createAccount(a);
        await s.createAccount(b);
        expect((await s.findAccountById(a.id))?.credentialsChangedAt ?? null).toBeNull();
        await s.setLocked(a.id, 5);
        expect((await s.findAccountById(a.id))?.credentialsChangedAt).toBe(5);
        await s.setLocked(a.id, null);
        expect(await s.findAccountById(a.id)).toMatchObject({ lockedAt: null, credentialsChangedAt: 5 });
        const mine = session(a.id);
        await insertSession(s, mine);
        await s.changePassword({
          accountId: a.id,
          passwordHash: 'new',
          sessionId: mine.id,
          tokenHash: 'c'.repeat(64),
          at: 2_000,
          credentialsChangedAt: 5,
        });
        expect((await s.findAccountById(a.id))?.credentialsChangedAt).toBe(2_000);
        // A refused password change stamps nothing.
        await s.changePassword({
          accountId: b.id,
          passwordHash: 'x',
          sessionId: mine.id,
          tokenHash: 'b'.repeat(64),
          at: 2_500,
          credentialsChangedAt: null,
        });
        expect((await s.findAccountById(b.id))?.credentialsChangedAt ?? null).toBeNull();
        await s.closeAllSessions(a.id, 3_000);
        expect((await s.findAccountById(a.id))?.credentialsChangedAt).toBe(3_000);
        expect((await s.findAccountById(b.id))?.credentialsChangedAt ?? null).toBeNull();
      }));
    it('changePassword is all-or-nothing and keeps the caller open', () =>
      using(setup, async (s) => {
        const a = account();
        const b = account();
        await s.createAccount(a);
        await s.createAccount(b);
        const mine = session(a.id);
        const other = session(a.id);
        const foreign = session(b.id);
        for (const x of [mine, other, foreign]) await insertSession(s, x);
        const newHash = 'f'.repeat(64);
        expect(
          await s.changePassword({
            accountId: a.id,
            passwordHash: 'new',
            sessionId: mine.id,
            tokenHash: newHash,
            at: 2_000,
            credentialsChangedAt: null,
          }),
        ).toBe(true);
        expect((await s.findAccountById(a.id))?.passwordHash).toBe('new');
        // Proving the current password is a credential proof: the caller's session is freshly authenticated.
        expect(await s.findSessionById(mine.id)).toMatchObject({
          tokenHash: newHash,
          accessFloor: 2_000,
          closedAt: null,
          createdAt: 1_000,
          authenticatedAt: 2_000,
        });
        expect((await s.findSessionById(other.id))?.closedAt).toBe(2_000);
        expect((await s.findSessionById(foreign.id))?.closedAt).toBeNull();
        // A closed caller session changes nothing.
        expect(
          await s.changePassword({
            accountId: a.id,
            passwordHash: 'newer',
            sessionId: other.id,
            tokenHash: 'e'.repeat(64),
            at: 3_000,
            credentialsChangedAt: 2_000,
          }),
        ).toBe(false);
        expect((await s.findAccountById(a.id))?.passwordHash).toBe('new');
        // Another account's session is not the caller's.
        expect(
          await s.changePassword({
            accountId: b.id,
            passwordHash: 'x',
            sessionId: mine.id,
            tokenHash: 'd'.repeat(64),
            at: 3_000,
            credentialsChangedAt: null,
          }),
        ).toBe(false);
      }));
    it("a password change closes exactly the sessions core's filter takes; a credential change, the account's open ones", () =>
      using(setup, async (s) => {
        const a = account();
        const b = account();
        await s.createAccount(a);
        await s.createAccount(b);
        const mine = session(a.id);
        const other = session(a.id);
        const ended = session(a.id);
        const foreign = session(b.id);
        for (const x of [mine, other, ended, foreign]) await insertSession(s, x);
        expect(await s.closeSession(a.id, ended.id, 1_500)).toBe(true);
        const change = { accountId: a.id, sessionId: mine.id };
        const before = await Promise.all(
          [mine, other, ended, foreign].map(async (x) => (await s.findSessionById(x.id))!),
        );
        // The expected closings come from core's filter; the ids name them so the filter is pinned too.
        const closes = before.filter((x) => closedByPasswordChange(x, change)).map((x) => x.id);
        expect(closes).toEqual([other.id]);
        expect(
          await s.changePassword({
            ...change,
            passwordHash: 'new',
            tokenHash: 'f'.repeat(64),
            at: 2_000,
            credentialsChangedAt: null,
          }),
        ).toBe(true);
        for (const x of before)
          expect((await s.findSessionById(x.id))?.closedAt).toBe(closes.includes(x.id) ? 2_000 : x.closedAt);
        // Revoke-all closes the account's open sessions, the caller's with them, and no other account's.
        const standing = await Promise.all(before.map(async (x) => (await s.findSessionById(x.id))!));
        const closesAll = standing.filter((x) => closedByCredentialChange(x, a.id)).map((x) => x.id);
        expect(closesAll).toEqual([mine.id]);
        expect(await s.closeAllSessions(a.id, 3_000)).toBe(closesAll.length);
        for (const x of standing)
          expect((await s.findSessionById(x.id))?.closedAt).toBe(closesAll.includes(x.id) ? 3_000 : x.closedAt);
      }));
    it('changePassword changes nothing when the credentials changed since the stamp it was judged against', () =>
      using(setup, async (s) => {
        const a = account();
        await s.createAccount(a);
        const mine = session(a.id);
        const other = session(a.id);
        for (const x of [mine, other]) await insertSession(s, x);
        // Two changes judged against the same stamp (null): the first wins, the second changes nothing.
        expect(
          await s.changePassword({
            accountId: a.id,
            passwordHash: 'first',
            sessionId: mine.id,
            tokenHash: 'a'.repeat(64),
            at: 2_000,
            credentialsChangedAt: null,
          }),
        ).toBe(true);
        // A sign-in after the first change: the refused second change must not close it.
        const later = session(a.id);
        expect(await s.openSession(later, 2_000)).toBe(true);
        expect(
          await s.changePassword({
            accountId: a.id,
            passwordHash: 'second',
            sessionId: mine.id,
            tokenHash: 'b'.repeat(64),
            at: 2_100,
            credentialsChangedAt: null,
          }),
        ).toBe(false);
        expect(await s.findAccountById(a.id)).toMatchObject({ passwordHash: 'first', credentialsChangedAt: 2_000 });
        expect(await s.findSessionById(mine.id)).toMatchObject({ tokenHash: 'a'.repeat(64), closedAt: null });
        expect((await s.findSessionById(later.id))?.closedAt).toBeNull();
      }));
    it('changePassword moves the access floor past the last recorded issuance when that is later than the change', () =>
      using(setup, async (s) => {
        const a = account();
        await s.createAccount(a);
        const mine = session(a.id);
        await insertSession(s, mine);
        // A refresh recorded its issuance at 2,500 (under the old token) before the change at 2,000 committed.
        expect(await s.recordIssuance(mine.id, mine.tokenHash, 2_500, 1_500)).toBe(true);
        expect(
          await s.changePassword({
            accountId: a.id,
            passwordHash: 'new',
            sessionId: mine.id,
            tokenHash: 'a'.repeat(64),
            at: 2_000,
            credentialsChangedAt: null,
          }),
        ).toBe(true);
        expect((await s.findSessionById(mine.id))?.accessFloor).toBe(2_501);
      }));
  });
}

export function describeSessionLedgerContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'sessions', 'SessionLedger', () => {
    it('a session keeps the time of its last proof; recordAuthentication renews an open one only', () =>
      using(setup, async (s) => {
        const a = account();
        await s.createAccount(a);
        const x = session(a.id, { authenticatedAt: 1_500 });
        const y = session(a.id);
        await insertSession(s, x);
        await insertSession(s, y);
        expect((await s.findSessionById(x.id))?.authenticatedAt).toBe(1_500);
        expect(await s.recordAuthentication(x.id, 9_000)).toBe(true);
        expect((await s.findSessionById(x.id))?.authenticatedAt).toBe(9_000);
        expect((await s.findSessionById(y.id))?.authenticatedAt).toBe(1_000);
        expect((await s.listOpenSessions(a.id)).find((r) => r.id === x.id)?.authenticatedAt).toBe(9_000);
        await s.closeSession(a.id, y.id, 9_500);
        expect(await s.recordAuthentication(y.id, 10_000)).toBe(false);
        expect((await s.findSessionById(y.id))?.authenticatedAt).toBe(1_000);
        expect(await s.recordAuthentication('0190b000-0000-7000-8000-ffffffffffff', 10_000)).toBe(false);
      }));
    it('inserts and finds by id and token hash', () =>
      using(setup, async (s) => {
        const a = account();
        await s.createAccount(a);
        const x = session(a.id, { cohortHash: 'c'.repeat(64) });
        await insertSession(s, x);
        expect(await s.findSessionById(x.id)).toEqual(x);
        expect(await s.findSessionByTokenHash(x.tokenHash)).toEqual(x);
        expect(await s.findSessionByTokenHash(`${'0'.repeat(63)}z`)).toBeNull();
      }));
    it('reads a session with its account in one call, and sees every change to either', () =>
      using(setup, async (s) => {
        const a = account({ displayName: 'Ada', createdAt: 1_500 });
        await s.createAccount(a);
        const x = session(a.id, { accessFloor: 1_200, lastUsedAt: 1_300 });
        await insertSession(s, x);
        const summary = { id: a.id, address: a.address, displayName: 'Ada', createdAt: 1_500, handleUser: null };
        // Exactly these fields: no password hash or address key rides along on every request.
        expect(await s.findSessionAccess(x.id)).toStrictEqual({
          accountId: a.id,
          accessFloor: 1_200,
          closedAt: null,
          lastUsedAt: 1_300,
          account: summary,
        });
        expect(await s.findSessionAccess('0190b000-0000-7000-8000-ffffffffffff')).toBeNull();
        await s.setDisplayName(a.id, null);
        await s.touchSession(x.id, 70_000, 10_000);
        expect(await s.findSessionAccess(x.id)).toStrictEqual({
          accountId: a.id,
          accessFloor: 1_200,
          closedAt: null,
          lastUsedAt: 70_000,
          account: { ...summary, displayName: null },
        });
        await s.closeSession(a.id, x.id, 80_000);
        expect((await s.findSessionAccess(x.id))?.closedAt).toBe(80_000);
      }));
    it("the per-request read carries the account's claimed handle, joined in the same read", async () => {
      const { ports, cleanup } = await setup();
      try {
        const a = account();
        await ports.accounts.createAccount(a);
        const x = session(a.id);
        await insertSession(ports.accounts, x);
        expect((await ports.accounts.findSessionAccess(x.id))?.account.handleUser).toBeNull();
        expect(await ports.discovery.claimHandle({ accountId: a.id, user: 'ada', at: 2_000 })).toBe('claimed');
        expect((await ports.accounts.findSessionAccess(x.id))?.account.handleUser).toBe('ada');
      } finally {
        await cleanup?.();
      }
    });
    it('records issuance only on open sessions, and touches last-used (by issuance or use) only when stale', () =>
      using(setup, async (s) => {
        const a = account();
        await s.createAccount(a);
        const x = session(a.id);
        await insertSession(s, x);
        expect(await s.recordIssuance(x.id, x.tokenHash, 5_000, 4_000)).toBe(true);
        expect(await s.findSessionById(x.id)).toMatchObject({
          refreshedAt: 5_000,
          lastUsedAt: 5_000,
          createdAt: 1_000,
        });
        // Another issuance within the interval restarts the idle clock; last-used is not written again.
        expect(await s.recordIssuance(x.id, x.tokenHash, 5_500, 4_500)).toBe(true);
        expect(await s.findSessionById(x.id)).toMatchObject({ refreshedAt: 5_500, lastUsedAt: 5_000 });
        await s.touchSession(x.id, 6_000, 4_000); // last used 5000 > 4000: not stale
        expect((await s.findSessionById(x.id))?.lastUsedAt).toBe(5_000);
        await s.touchSession(x.id, 70_000, 10_000);
        expect((await s.findSessionById(x.id))?.lastUsedAt).toBe(70_000);
        await s.closeSession(a.id, x.id, 80_000);
        // The write reports that no open session matched (a revoke won the race): core refuses.
        expect(await s.recordIssuance(x.id, x.tokenHash, 90_000, 30_000)).toBe(false);
        expect((await s.findSessionById(x.id))?.refreshedAt).toBe(5_500);
        expect(await s.recordIssuance('0190a000-0000-7000-8000-0000000000ff', x.tokenHash, 90_000, 30_000)).toBe(false);
      }));
    it("openSession opens a sign-in's session only while the account's credentials are as the sign-in judged them", () =>
      using(setup, async (s) => {
        const a = account();
        await s.createAccount(a);
        const first = session(a.id);
        expect(await s.openSession(first, null)).toBe(true);
        expect(await s.findSessionById(first.id)).toMatchObject({ id: first.id, closedAt: null });
        // A revoke-all committed since the sign-in read the account: nothing opens.
        await s.closeAllSessions(a.id, 2_000);
        const late = session(a.id);
        expect(await s.openSession(late, null)).toBe(false);
        expect(await s.findSessionById(late.id)).toBeNull();
        // Judged against the new stamp, it opens; a lock then moves the stamp again.
        expect(await s.openSession(late, 2_000)).toBe(true);
        await s.setLocked(a.id, 3_000);
        const locked = session(a.id);
        expect(await s.openSession(locked, 2_000)).toBe(false);
        // No such account: nothing.
        expect(await s.openSession(session('0190a000-0000-7000-8000-0000000000ee'), null)).toBe(false);
      }));
    it("records issuance only under the session's current token, keeping the later instant", () =>
      using(setup, async (s) => {
        const a = account();
        await s.createAccount(a);
        const x = session(a.id);
        await insertSession(s, x);
        // Re-keyed by a password change: the old token records nothing.
        expect(
          await s.changePassword({
            accountId: a.id,
            passwordHash: 'new',
            sessionId: x.id,
            tokenHash: 'e'.repeat(64),
            at: 2_000,
            credentialsChangedAt: null,
          }),
        ).toBe(true);
        expect(await s.recordIssuance(x.id, x.tokenHash, 3_000, 2_000)).toBe(false);
        expect((await s.findSessionById(x.id))?.refreshedAt).toBe(1_000);
        expect(await s.recordIssuance(x.id, 'e'.repeat(64), 3_000, 2_000)).toBe(true);
        // Two refreshes crossing: the earlier instant, written last, does not move the clock back.
        expect(await s.recordIssuance(x.id, 'e'.repeat(64), 2_500, 1_500)).toBe(true);
        expect(await s.findSessionById(x.id)).toMatchObject({ refreshedAt: 3_000, lastUsedAt: 3_000 });
      }));
    it('closes one, then all, of one account only', () =>
      using(setup, async (s) => {
        const a = account();
        const b = account();
        await s.createAccount(a);
        await s.createAccount(b);
        const [x, y, z] = [session(a.id), session(a.id), session(b.id)];
        for (const r of [x, y, z]) await insertSession(s, r);
        expect(await s.closeSession(b.id, x.id, 2)).toBe(false);
        expect(await s.closeSession(a.id, x.id, 2)).toBe(true);
        expect(await s.closeSession(a.id, x.id, 3)).toBe(false);
        expect((await s.listOpenSessions(a.id)).map((r) => r.id)).toEqual([y.id]);
        expect(await s.closeAllSessions(a.id, 4)).toBe(1);
        expect(await s.recordAuthentication(y.id, 5)).toBe(false);
        expect(await s.listOpenSessions(a.id)).toEqual([]);
        expect((await s.findSessionById(x.id))?.closedAt).toBe(2);
        expect((await s.listOpenSessions(b.id)).map((r) => r.id)).toEqual([z.id]);
      }));
  });
}

export function describeCohortMapContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'cohorts', 'CohortMap', () => {
    it('keeps first_seen and moves last_seen', () =>
      using(setup, async (s) => {
        const a = account();
        await s.createAccount(a);
        await s.recordCohort(a.id, 'a'.repeat(64), 10);
        await s.recordCohort(a.id, 'b'.repeat(64), 20);
        await s.recordCohort(a.id, 'a'.repeat(64), 30);
        expect(await s.listCohorts(a.id)).toEqual([
          { cohortHash: 'a'.repeat(64), firstSeen: 10, lastSeen: 30 },
          { cohortHash: 'b'.repeat(64), firstSeen: 20, lastSeen: 20 },
        ]);
      }));
    it('never moves last_seen back nor first_seen forward when sightings arrive out of order', () =>
      using(setup, async (s) => {
        const a = account();
        await s.createAccount(a);
        const h = 'c'.repeat(64);
        await s.recordCohort(a.id, h, 50);
        await s.recordCohort(a.id, h, 40); // a slower process reports an earlier sign-in
        expect(await s.listCohorts(a.id)).toEqual([{ cohortHash: h, firstSeen: 40, lastSeen: 50 }]);
        await s.recordCohort(a.id, h, 45);
        await s.recordCohort(a.id, h, 60);
        expect(await s.listCohorts(a.id)).toEqual([{ cohortHash: h, firstSeen: 40, lastSeen: 60 }]);
      }));
  });
}

export function describeSigningKeyStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'signing-keys', 'SigningKeyStore', () => {
    const key = (kid: string, createdAt: number) => ({
      kid,
      privateKey: `p${kid}`,
      publicKey: `x${kid}`,
      createdAt,
      retiredAt: null,
    });
    it('ensures one first key, then rotates atomically', () =>
      using(setup, async (s) => {
        expect(await s.ensureSigningKey(key('k1', 1))).toEqual([key('k1', 1)]);
        expect(await s.ensureSigningKey(key('k2', 2))).toEqual([key('k1', 1)]);
        await s.rotateSigningKey(key('k3', 3), 3);
        const all = (await s.listSigningKeys()).sort((a, b) => a.createdAt - b.createdAt);
        expect(all).toEqual([{ ...key('k1', 1), retiredAt: 3 }, key('k3', 3)]);
      }));
    it('reseals a key only while it still holds the value the caller read', () =>
      using(setup, async (s) => {
        await s.ensureSigningKey(key('k1', 1));
        await s.rotateSigningKey(key('k2', 2), 2);
        expect(await s.resealSigningKey('k1', 'stale', 'v1.x.y')).toBe(false);
        expect(await s.resealSigningKey('nope', 'pk1', 'v1.x.y')).toBe(false);
        const outcomes = await Promise.all([
          s.resealSigningKey('k1', 'pk1', 'v1.a.a'),
          s.resealSigningKey('k1', 'pk1', 'v1.b.b'),
        ]);
        expect(outcomes.filter(Boolean)).toHaveLength(1);
        const all = (await s.listSigningKeys()).sort((a, b) => a.createdAt - b.createdAt);
        expect(all).toEqual([
          { ...key('k1', 1), retiredAt: 2, privateKey: outcomes[0] ? 'v1.a.a' : 'v1.b.b' },
          key('k2', 2),
        ]);
      }));
  });
}
