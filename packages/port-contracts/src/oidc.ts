import { expect, it } from 'vitest';
import {
  holds,
  OIDC_LAPSED,
  type AccountRecord,
  type IdentityLink,
  type LoginCodeRecord,
  type OidcFlowRecord,
  type Ports,
} from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { describeContract } from './registry.js';

let n = 0;
function account(over: Partial<AccountRecord> = {}): AccountRecord {
  n++;
  return {
    id: `0190d000-0000-7000-8000-${String(n).padStart(12, '0')}`,
    address: `oidc${n}@example.org`,
    addressKey: `oidc${n}@example.org`,
    passwordHash: null,
    displayName: null,
    createdAt: 1_000,
    lockedAt: null,
    credentialsChangedAt: null,
    ...over,
  };
}
const hash = (i: number): string => (i + 0x5000).toString(16).padStart(64, '0');
function flow(over: Partial<OidcFlowRecord> = {}): OidcFlowRecord {
  n++;
  return {
    stateHash: hash(n),
    purpose: 'sign_in',
    initiator: null,
    returnTo: 'https://app.example/done',
    appChallenge: null,
    sealedVerifier: 'v1.iv.body',
    createdAt: 1_000,
    expiresAt: 601_000,
    ...over,
  };
}
function code(accountId: string, over: Partial<LoginCodeRecord> = {}): LoginCodeRecord {
  n++;
  return {
    codeHash: hash(n),
    purpose: 'sign_in',
    accountId,
    appChallenge: null,
    issuer: null,
    subject: null,
    authenticatedAt: 900,
    createdAt: 1_000,
    expiresAt: 61_000,
    ...over,
  };
}
const link = (accountId: string, subject: string, over: Partial<IdentityLink> = {}): IdentityLink => ({
  issuer: 'https://idp.example',
  subject,
  accountId,
  createdAt: 2_000,
  ...over,
});

async function using(setup: Setup, body: (ports: Ports) => Promise<void>): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    await body(ports);
  } finally {
    await cleanup?.();
  }
}

export function describeOidcFlowStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'oidc-flows', 'OidcFlowStore', () => {
    it('takes a flow exactly once, as it was stored', () =>
      using(setup, async ({ oidc }) => {
        const f = flow({ appChallenge: 'c'.repeat(43) });
        await oidc.insertFlow(f, 0);
        expect(await oidc.takeFlow(hash(0))).toBeNull();
        expect(await oidc.takeFlow(f.stateHash)).toEqual(f);
        expect(await oidc.takeFlow(f.stateHash)).toBeNull();
      }));

    it('keeps the initiator of a link or reauthentication', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account();
        await accounts.createAccount(a);
        const f = flow({ purpose: 'link', initiator: a.id });
        await oidc.insertFlow(f, 0);
        expect(await oidc.takeFlow(f.stateHash)).toEqual(f);
      }));

    it('concurrent takers of one flow: exactly one gets it', () =>
      using(setup, async ({ oidc }) => {
        const f = flow();
        await oidc.insertFlow(f, 0);
        const got = await Promise.all([
          oidc.takeFlow(f.stateHash),
          oidc.takeFlow(f.stateHash),
          oidc.takeFlow(f.stateHash),
        ]);
        expect(got.filter((g) => g !== null)).toEqual([f]);
      }));

    it('purges flows and codes that expired before the given instant, and only those', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account();
        await accounts.createAccount(a);
        const old = flow({ expiresAt: 500 });
        const live = flow({ expiresAt: 5_000 });
        const oldCode = code(a.id, { expiresAt: 700 });
        const liveCode = code(a.id, { expiresAt: 5_000 });
        await oidc.insertFlow(old, 0);
        await oidc.insertFlow(live, 0);
        await oidc.insertLoginCode(oldCode);
        await oidc.insertLoginCode(liveCode);
        await oidc.insertFlow(flow(), 1_000);
        expect(await oidc.takeFlow(old.stateHash)).toBeNull();
        expect(await oidc.takeLoginCode(oldCode.codeHash)).toBeNull();
        expect(await oidc.takeFlow(live.stateHash)).toEqual(live);
        expect(await oidc.takeLoginCode(liveCode.codeHash)).toEqual(liveCode);
      }));

    it("drops exactly the flows and codes core's OIDC_LAPSED takes when a flow is stored", () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account();
        await accounts.createAccount(a);
        // Around the instant of the next insert: one before it, one at it, one after.
        const now = 1_000;
        const flows = [now - 1, now, now + 1].map((expiresAt) => flow({ expiresAt }));
        const codes = [now - 1, now, now + 1].map((expiresAt) => code(a.id, { expiresAt }));
        for (const f of flows) await oidc.insertFlow(f, 0);
        for (const c of codes) await oidc.insertLoginCode(c);
        await oidc.insertFlow(flow(), now);
        // The expectation is core's filter, pinned: a record at its expiry is lapsed (isLive says so too).
        const lapsed = (r: { expiresAt: number }) => holds(OIDC_LAPSED, r, { now });
        expect(flows.filter(lapsed).map((f) => f.expiresAt)).toEqual([now - 1, now]);
        for (const f of flows) expect(await oidc.takeFlow(f.stateHash)).toEqual(lapsed(f) ? null : f);
        for (const c of codes) expect(await oidc.takeLoginCode(c.codeHash)).toEqual(lapsed(c) ? null : c);
      }));

    it('takes a login code exactly once, as it was stored', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account();
        await accounts.createAccount(a);
        const c = code(a.id, {
          purpose: 'link',
          issuer: 'https://idp.example',
          subject: 'sub-1',
          appChallenge: 'x'.repeat(43),
        });
        await oidc.insertLoginCode(c);
        const got = await Promise.all([oidc.takeLoginCode(c.codeHash), oidc.takeLoginCode(c.codeHash)]);
        expect(got.filter((g) => g !== null)).toEqual([c]);
        expect(await oidc.takeLoginCode(c.codeHash)).toBeNull();
      }));
  });
}

export function describeIdentityLinkStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'identity-links', 'IdentityLinkStore', () => {
    it('creates an account with its first link, atomically', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account();
        expect(await oidc.createLinkedAccount(a, link(a.id, 's1'))).toBe('created');
        expect(await accounts.findAccountById(a.id)).toEqual(a);
        expect(await oidc.findLink('https://idp.example', 's1')).toEqual(link(a.id, 's1'));
        expect(await oidc.findLink('https://other.example', 's1')).toBeNull();
        expect(await oidc.listLinks(a.id)).toEqual([link(a.id, 's1')]);
      }));

    it('writes nothing when the identity or the address is taken', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account();
        await oidc.createLinkedAccount(a, link(a.id, 's1'));
        const b = account();
        expect(await oidc.createLinkedAccount(b, link(b.id, 's1'))).toBe('link_taken');
        expect(await accounts.findAccountById(b.id)).toBeNull();
        const c = account({ address: a.address, addressKey: a.addressKey });
        expect(await oidc.createLinkedAccount(c, link(c.id, 's2'))).toBe('address_taken');
        expect(await accounts.findAccountById(c.id)).toBeNull();
        expect(await oidc.findLink('https://idp.example', 's2')).toBeNull();
      }));

    it('two first sign-ins of one identity at once: exactly one account is created', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account({ address: null, addressKey: null });
        const b = account({ address: null, addressKey: null });
        const outcomes = await Promise.all([
          oidc.createLinkedAccount(a, link(a.id, 'race')),
          oidc.createLinkedAccount(b, link(b.id, 'race')),
        ]);
        expect([...outcomes].sort()).toEqual(['created', 'link_taken']);
        const winner = outcomes[0] === 'created' ? a : b;
        const loser = winner === a ? b : a;
        expect((await oidc.findLink('https://idp.example', 'race'))?.accountId).toBe(winner.id);
        expect(await accounts.findAccountById(loser.id)).toBeNull();
      }));

    it('an identity bound already answers link_taken, even when its address is taken too', () =>
      using(setup, async ({ accounts, oidc }) => {
        // The loser of two first sign-ins of one identity with one verified email signs in to the
        // winner's account (core reads the link on link_taken); address_taken would refuse it instead.
        const a = account();
        expect(await oidc.createLinkedAccount(a, link(a.id, 'both'))).toBe('created');
        const b = account({ address: a.address, addressKey: a.addressKey });
        expect(await oidc.createLinkedAccount(b, link(b.id, 'both'))).toBe('link_taken');
        expect(await accounts.findAccountById(b.id)).toBeNull();
      }));

    it('two first sign-ins of one identity with one address at once: created and link_taken', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account();
        const b = account({ address: a.address, addressKey: a.addressKey });
        const outcomes = await Promise.all([
          oidc.createLinkedAccount(a, link(a.id, 'race2')),
          oidc.createLinkedAccount(b, link(b.id, 'race2')),
        ]);
        expect([...outcomes].sort()).toEqual(['created', 'link_taken']);
        const winner = outcomes[0] === 'created' ? a : b;
        expect((await oidc.findLink('https://idp.example', 'race2'))?.accountId).toBe(winner.id);
        expect(await accounts.findAccountById(winner === a ? b.id : a.id)).toBeNull();
      }));

    it('accounts without an address do not collide with one another', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account({ address: null, addressKey: null });
        const b = account({ address: null, addressKey: null });
        expect(await oidc.createLinkedAccount(a, link(a.id, 'na'))).toBe('created');
        expect(await oidc.createLinkedAccount(b, link(b.id, 'nb'))).toBe('created');
        expect((await accounts.findAccountById(b.id))?.address).toBeNull();
      }));

    it('binds an identity to one account only', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account();
        const b = account();
        await accounts.createAccount(a);
        await accounts.createAccount(b);
        expect(await oidc.insertLink(link(a.id, 's3'))).toBe('linked');
        expect(await oidc.insertLink(link(a.id, 's3', { createdAt: 9_000 }))).toBe('exists');
        expect(await oidc.insertLink(link(b.id, 's3'))).toBe('taken');
        expect(await oidc.findLink('https://idp.example', 's3')).toEqual(link(a.id, 's3'));
        expect(await oidc.insertLink(link(a.id, 's3', { issuer: 'https://other.example' }))).toBe('linked');
        expect((await oidc.listLinks(a.id)).length).toBe(2);
        expect(await oidc.listLinks(b.id)).toEqual([]);
      }));

    it('sessions keep the sign-in method they were opened with (absent reads as password)', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account({ address: null, addressKey: null });
        await oidc.createLinkedAccount(a, link(a.id, 's6'));
        const base = {
          accountId: a.id,
          cohortHash: null,
          createdAt: 1_000,
          refreshedAt: 1_000,
          lastUsedAt: 1_000,
          accessFloor: 1_000,
          closedAt: null,
          authenticatedAt: 1_000,
        };
        expect(
          await accounts.openSession(
            { ...base, id: '0190d000-0000-7000-8000-00000000aaa1', tokenHash: hash(9_001), method: 'oidc' },
            null,
          ),
        ).toBe(true);
        expect(
          await accounts.openSession(
            { ...base, id: '0190d000-0000-7000-8000-00000000aaa2', tokenHash: hash(9_002) },
            null,
          ),
        ).toBe(true);
        expect((await accounts.findSessionById('0190d000-0000-7000-8000-00000000aaa1'))?.method).toBe('oidc');
        expect((await accounts.findSessionById('0190d000-0000-7000-8000-00000000aaa2'))?.method).toBe('password');
        const listed = await accounts.listOpenSessions(a.id);
        expect(listed.map((s) => s.method).sort()).toEqual(['oidc', 'password']);
        expect((await accounts.findSessionAccess('0190d000-0000-7000-8000-00000000aaa1'))?.account.address).toBeNull();
      }));

    it('removes the account links at one issuer only', () =>
      using(setup, async ({ accounts, oidc }) => {
        const a = account();
        const b = account();
        await accounts.createAccount(a);
        await accounts.createAccount(b);
        await oidc.insertLink(link(a.id, 's4'));
        await oidc.insertLink(link(a.id, 's4', { issuer: 'https://other.example' }));
        await oidc.insertLink(link(b.id, 's5'));
        expect(await oidc.removeLinks(a.id, 'https://idp.example')).toBe(1);
        expect(await oidc.removeLinks(a.id, 'https://idp.example')).toBe(0);
        expect(await oidc.findLink('https://idp.example', 's4')).toBeNull();
        expect(await oidc.listLinks(a.id)).toEqual([link(a.id, 's4', { issuer: 'https://other.example' })]);
        expect(await oidc.findLink('https://idp.example', 's5')).toEqual(link(b.id, 's5'));
      }));
  });
}
