import { expect, it } from 'vitest';
import {
  claimCodeCheck,
  THROTTLE_FREE_WRONG_CODES,
  THROTTLE_WINDOW_MS,
  type AccountRecord,
  type Ports,
  type SessionRecord,
  type TotpThrottleState,
} from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { describeContract } from './registry.js';
import { testAccount } from './fixtures.js';

let n = 0;
const account = (): AccountRecord => testAccount('second');
function session(accountId: string): SessionRecord {
  n++;
  return {
    id: `0190d100-0000-7000-8000-${String(n).padStart(12, '0')}`,
    accountId,
    method: 'password',
    tokenHash: (n + 0xd000).toString(16).padStart(64, '0'),
    cohortHash: null,
    createdAt: 5_000,
    refreshedAt: 5_000,
    lastUsedAt: 5_000,
    accessFloor: 5_000,
    closedAt: null,
    authenticatedAt: 5_000,
  };
}

async function using(setup: Setup, count: number, body: (ports: Ports, ids: string[]) => Promise<void>): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const a = account();
      await ports.accounts.createAccount(a);
      ids.push(a.id);
    }
    await body(ports, ids);
  } finally {
    await cleanup?.();
  }
}

const T0 = Date.parse('2026-11-21T10:00:00.000Z');

export function describeSecondFactorContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'second-factor', 'TotpThrottleStore and TotpRecoveryStore', () => {
    it("claims code checks per account by core's rule: counted as wrong before the compare, refused while held", () =>
      using(setup, 2, async ({ secondFactor: s }, [a, b]) => {
        expect(await s.findTotpThrottle(a!)).toBeNull();
        let expected = null as TotpThrottleState | null;
        const times = [T0, T0 + 1, T0 + 1, T0 + 60_000, T0 + THROTTLE_WINDOW_MS, T0 + THROTTLE_WINDOW_MS + 5];
        for (const at of times) {
          const claim = claimCodeCheck(expected, at);
          expected = claim.next ?? expected;
          expect(await s.claimTotpCodeCheck(a!, at)).toEqual(claim.admission);
        }
        expect(await s.findTotpThrottle(a!)).toEqual(expected);
        // The first two fell out of the hour; the rest are kept in order.
        expect(expected!.wrongCodesAt).toEqual([T0 + 60_000, T0 + THROTTLE_WINDOW_MS, T0 + THROTTLE_WINDOW_MS + 5]);
        // A right code gives its place back.
        await s.refundTotpCodeCheck(a!, T0 + THROTTLE_WINDOW_MS);
        expect(await s.findTotpThrottle(a!)).toEqual({ wrongCodesAt: [T0 + 60_000, T0 + THROTTLE_WINDOW_MS + 5] });
        // Ten admitted, then held: the eleventh is refused with the delay, and nothing is written.
        expect(await s.findTotpThrottle(b!)).toBeNull();
        for (let i = 0; i < THROTTLE_FREE_WRONG_CODES; i++)
          expect(await s.claimTotpCodeCheck(b!, T0 + i * 1000)).toEqual({ admitted: true });
        const before = await s.findTotpThrottle(b!);
        expect(await s.claimTotpCodeCheck(b!, T0 + 10_000)).toEqual({ admitted: false, retryAfterS: 59 });
        expect(await s.findTotpThrottle(b!)).toEqual(before);
        // Refunding an account with nothing recorded changes nothing.
        const c = await s.findTotpThrottle(a!);
        await s.refundTotpCodeCheck(a!, 12345);
        expect(await s.findTotpThrottle(a!)).toEqual(c);
      }));

    it('admits no more than the bound of many concurrent claims (an atomic read-decide-write)', () =>
      using(setup, 1, async ({ secondFactor: s }, [a]) => {
        const claims = await Promise.all(Array.from({ length: 40 }, (_, i) => s.claimTotpCodeCheck(a!, T0 + (i % 3))));
        expect(claims.filter((c) => c.admitted)).toHaveLength(THROTTLE_FREE_WRONG_CODES);
        expect((await s.findTotpThrottle(a!))!.wrongCodesAt).toHaveLength(THROTTLE_FREE_WRONG_CODES);
      }));

    it('recovery removes a confirmed factor and opens the session in one step, and only once', () =>
      using(setup, 3, async ({ secondFactor: s, totp, accounts }, [a, pending, none]) => {
        await totp.savePendingTotp({ accountId: a!, sealedSecret: 'v1.a', at: 1 });
        await totp.confirmTotp({ accountId: a!, sealedSecret: 'v1.a', step: 10, at: 2 });
        await totp.savePendingTotp({ accountId: pending!, sealedSecret: 'v1.p', at: 1 });
        const first = session(a!);
        expect(await s.recoverTotp(a!, first)).toBe(true);
        expect(await totp.findTotpEnrollment(a!)).toBeNull();
        expect(await accounts.findSessionById(first.id)).toEqual(first);
        // A recovery is a credential change, stamped in the same step.
        expect((await accounts.findAccountById(a!))?.credentialsChangedAt).toBe(first.createdAt);
        // Nothing left to recover: no session is opened.
        const again = session(a!);
        expect(await s.recoverTotp(a!, again)).toBe(false);
        expect(await accounts.findSessionById(again.id)).toBeNull();
        // A pending enrollment or none at all: refused, nothing changed.
        const p = session(pending!);
        expect(await s.recoverTotp(pending!, p)).toBe(false);
        expect((await totp.findTotpEnrollment(pending!))?.state).toBe('pending');
        expect(await accounts.findSessionById(p.id)).toBeNull();
        expect((await accounts.findAccountById(pending!))?.credentialsChangedAt ?? null).toBeNull();
        const q = session(none!);
        expect(await s.recoverTotp(none!, q)).toBe(false);
        expect(await accounts.findSessionById(q.id)).toBeNull();
      }));

    it('two concurrent recoveries of one factor open exactly one session', () =>
      using(setup, 1, async ({ secondFactor: s, totp, accounts }, [a]) => {
        await totp.savePendingTotp({ accountId: a!, sealedSecret: 'v1.a', at: 1 });
        await totp.confirmTotp({ accountId: a!, sealedSecret: 'v1.a', step: 10, at: 2 });
        const [x, y] = [session(a!), session(a!)];
        const results = await Promise.all([s.recoverTotp(a!, x), s.recoverTotp(a!, y)]);
        expect(results.filter(Boolean)).toHaveLength(1);
        expect((await accounts.listOpenSessions(a!)).length).toBe(1);
      }));
  });
}

export function describeDeploymentContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'deployment', 'DeploymentStore', () => {
    it('the first claim is recorded; later claims read it back unchanged', () =>
      using(setup, 0, async ({ deployment: d }) => {
        expect(await d.setDeploymentIssuer({ issuer: 'https://nowhere.example', issuerConfigured: true })).toBe(false);
        const first = {
          keyFingerprint: 'a'.repeat(64),
          issuer: 'http://localhost:8080',
          issuerConfigured: false,
          recordedAt: T0,
        };
        expect(await d.claimDeployment(first)).toEqual(first);
        expect(
          await d.claimDeployment({
            keyFingerprint: 'b'.repeat(64),
            issuer: 'https://other.example',
            issuerConfigured: true,
            recordedAt: T0 + 1,
          }),
        ).toEqual(first);
        expect(await d.setDeploymentIssuer({ issuer: 'https://moved.example', issuerConfigured: true })).toBe(true);
        expect(await d.claimDeployment(first)).toEqual({
          ...first,
          issuer: 'https://moved.example',
          issuerConfigured: true,
        });
      }));

    it('a lease goes to one holder at a time: refused to others while live, taken over once lapsed, ended only by its holder', () =>
      using(setup, 0, async ({ deployment: d }) => {
        expect(await d.takeLease('staging-sweep', 'p1', T0, 60_000)).toBe(true);
        expect(await d.takeLease('staging-sweep', 'p2', T0 + 1, 60_000)).toBe(false);
        // Another name is another lease.
        expect(await d.takeLease('other-job', 'p2', T0 + 1, 60_000)).toBe(true);
        // Its holder renews it; another's release leaves it.
        expect(await d.takeLease('staging-sweep', 'p1', T0 + 2, 60_000)).toBe(true);
        await d.releaseLease('staging-sweep', 'p2');
        expect(await d.takeLease('staging-sweep', 'p2', T0 + 60_001, 60_000)).toBe(false);
        // Lapsed (its holder died): the next asker takes it over, and the old holder cannot end it.
        expect(await d.takeLease('staging-sweep', 'p2', T0 + 60_002, 60_000)).toBe(true);
        await d.releaseLease('staging-sweep', 'p1');
        expect(await d.takeLease('staging-sweep', 'p1', T0 + 60_003, 60_000)).toBe(false);
        await d.releaseLease('staging-sweep', 'p2');
        expect(await d.takeLease('staging-sweep', 'p1', T0 + 60_004, 60_000)).toBe(true);
      }));

    it('concurrent takers of one lease: exactly one holds it', () =>
      using(setup, 0, async ({ deployment: d }) => {
        const taken = await Promise.all(Array.from({ length: 6 }, (_, i) => d.takeLease('race', `p${i}`, T0, 60_000)));
        expect(taken.filter(Boolean)).toHaveLength(1);
      }));

    it('what a restore closes: every open session, challenge, login code and OpenID flow, every account stamped, nothing else', () =>
      using(setup, 2, async (ports, [a, b]) => {
        const { accounts, totp, devices, oidc, deployment: d } = ports;
        const [x, y, z] = [session(a!), session(a!), session(b!)];
        for (const s of [x, y, z]) expect(await accounts.openSession(s, null)).toBe(true);
        expect(await accounts.closeSession(a!, y.id, T0)).toBe(true);
        await totp.createTotpChallenge({ idHash: 'c'.repeat(64), accountId: a!, expiresAt: T0 + 300_000, attempts: 0 });
        await devices.insertRevokeAllChallenge(
          { challengeHash: 'd'.repeat(64), accountId: b!, expiresAt: T0 + 300_000 },
          T0,
          () => ({ admitted: true }),
        );
        await oidc.insertFlow(
          {
            stateHash: 'e'.repeat(64),
            purpose: 'sign_in',
            initiator: null,
            returnTo: 'https://app.example/done',
            appChallenge: null,
            sealedVerifier: 'v1.iv.body',
            createdAt: T0,
            expiresAt: T0 + 600_000,
          },
          0,
        );
        await oidc.insertLoginCode({
          codeHash: 'f'.repeat(64),
          purpose: 'sign_in',
          accountId: b!,
          appChallenge: null,
          issuer: null,
          subject: null,
          authenticatedAt: T0,
          createdAt: T0,
          expiresAt: T0 + 60_000,
        });
        const at = T0 + 7;
        expect(await d.closeEverythingForRestore(at)).toEqual({
          sessions: 2,
          secondFactorChallenges: 1,
          revokeAllChallenges: 1,
          oidcLoginCodes: 1,
          oidcFlows: 1,
        });
        expect(await accounts.listOpenSessions(a!)).toEqual([]);
        expect(await accounts.listOpenSessions(b!)).toEqual([]);
        // Closed at the restore's time; the one closed before keeps its own time.
        expect((await accounts.findSessionById(x.id))?.closedAt).toBe(at);
        expect((await accounts.findSessionById(y.id))?.closedAt).toBe(T0);
        for (const id of [a!, b!]) expect((await accounts.findAccountById(id))?.credentialsChangedAt).toBe(at);
        expect(await totp.consumeTotpChallenge('c'.repeat(64))).toBe(false);
        expect(await devices.consumeRevokeAllChallenge('d'.repeat(64))).toBeNull();
        expect(await oidc.takeFlow('e'.repeat(64))).toBeNull();
        expect(await oidc.takeLoginCode('f'.repeat(64))).toBeNull();
        // Nothing left to close the second time.
        expect(await d.closeEverythingForRestore(at + 1)).toEqual({
          sessions: 0,
          secondFactorChallenges: 0,
          revokeAllChallenges: 0,
          oidcLoginCodes: 0,
          oidcFlows: 0,
        });
      }));

    it('concurrent first claims agree on one record', () =>
      using(setup, 0, async ({ deployment: d }) => {
        const claims = Array.from({ length: 5 }, (_, i) => ({
          keyFingerprint: String(i).repeat(64),
          issuer: `https://p${i}.example`,
          issuerConfigured: i % 2 === 0,
          recordedAt: T0 + i,
        }));
        const results = await Promise.all(claims.map((c) => d.claimDeployment(c)));
        expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
        expect(claims.map((c) => JSON.stringify(c))).toContain(JSON.stringify(results[0]));
      }));
  });
}
