import { expect, it } from 'vitest';
import { holds, TOTP_CHALLENGE_LAPSED, type AccountRecord, type TotpStore } from '@strongroom/core';
import type { Setup } from './accounts-sessions.js';
import { describeContract } from './registry.js';
import { testAccount } from './fixtures.js';

const account = (): AccountRecord => testAccount('totp');
/** A time inside TOTP step `step` (the stores judge a step against the time they are given). */
const nearStep = (step: number): number => step * 30_000 + 1_000;
const hash = (i: number): string => i.toString(16).padStart(64, '0');

/** A fresh store with `count` accounts created first (real adapters hold foreign keys to them). */
async function using(
  setup: Setup,
  count: number,
  body: (store: TotpStore, ids: string[]) => Promise<void>,
): Promise<void> {
  const { ports, cleanup } = await setup();
  try {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const a = account();
      await ports.accounts.createAccount(a);
      ids.push(a.id);
    }
    await body(ports.totp, ids);
  } finally {
    await cleanup?.();
  }
}

export function describeTotpStoreContract(adapter: string, setup: Setup): void {
  describeContract(adapter, 'totp', 'TotpStore', () => {
    it('saves a pending enrollment and replaces it while pending', () =>
      using(setup, 1, async (s, [a]) => {
        expect(await s.findTotpEnrollment(a!)).toBeNull();
        expect(await s.savePendingTotp({ accountId: a!, sealedSecret: 'v1.one', at: 10 })).toBe(true);
        expect(await s.findTotpEnrollment(a!)).toEqual({
          accountId: a,
          state: 'pending',
          sealedSecret: 'v1.one',
          highestUsedStep: null,
          createdAt: 10,
          confirmedAt: null,
        });
        expect(await s.savePendingTotp({ accountId: a!, sealedSecret: 'v1.two', at: 20 })).toBe(true);
        expect(await s.findTotpEnrollment(a!)).toEqual({
          accountId: a,
          state: 'pending',
          sealedSecret: 'v1.two',
          highestUsedStep: null,
          createdAt: 20,
          confirmedAt: null,
        });
      }));

    it('confirms only the pending secret it was checked against, and only once', () =>
      using(setup, 1, async (s, [a]) => {
        expect(await s.confirmTotp({ accountId: a!, sealedSecret: 'v1.one', step: 7, at: 30 })).toBe(false);
        await s.savePendingTotp({ accountId: a!, sealedSecret: 'v1.two', at: 20 });
        expect(await s.confirmTotp({ accountId: a!, sealedSecret: 'v1.one', step: 7, at: 30 })).toBe(false);
        expect((await s.findTotpEnrollment(a!))?.state).toBe('pending');
        expect(await s.confirmTotp({ accountId: a!, sealedSecret: 'v1.two', step: 7, at: 30 })).toBe(true);
        expect(await s.findTotpEnrollment(a!)).toEqual({
          accountId: a,
          state: 'confirmed',
          sealedSecret: 'v1.two',
          highestUsedStep: 7,
          createdAt: 20,
          confirmedAt: 30,
        });
        expect(await s.confirmTotp({ accountId: a!, sealedSecret: 'v1.two', step: 8, at: 40 })).toBe(false);
        // A confirmed factor is never replaced by a new pending one.
        expect(await s.savePendingTotp({ accountId: a!, sealedSecret: 'v1.three', at: 50 })).toBe(false);
        expect(await s.findTotpEnrollment(a!)).toMatchObject({
          state: 'confirmed',
          sealedSecret: 'v1.two',
          highestUsedStep: 7,
        });
      }));

    it('advanceTotpStep is a compare-and-set on the highest used step of a confirmed factor', () =>
      using(setup, 2, async (s, [a, b]) => {
        expect(await s.advanceTotpStep(a!, 5, nearStep(5))).toBe(false);
        await s.savePendingTotp({ accountId: a!, sealedSecret: 'v1.a', at: 1 });
        expect(await s.advanceTotpStep(a!, 5, nearStep(5))).toBe(false);
        await s.confirmTotp({ accountId: a!, sealedSecret: 'v1.a', step: 100, at: 2 });
        expect(await s.advanceTotpStep(a!, 99, nearStep(99))).toBe(false);
        expect(await s.advanceTotpStep(a!, 100, nearStep(100))).toBe(false);
        expect(await s.advanceTotpStep(a!, 101, nearStep(101))).toBe(true);
        expect(await s.advanceTotpStep(a!, 101, nearStep(101))).toBe(false);
        expect(await s.advanceTotpStep(a!, 103, nearStep(103))).toBe(true);
        expect((await s.findTotpEnrollment(a!))?.highestUsedStep).toBe(103);
        // Steps are large integers in practice (about 59 million in 2026); no precision lost.
        expect(await s.advanceTotpStep(a!, 59_012_345_678, nearStep(59_012_345_678))).toBe(true);
        expect((await s.findTotpEnrollment(a!))?.highestUsedStep).toBe(59_012_345_678);
        expect(await s.findTotpEnrollment(b!)).toBeNull();
        // Core's step rule, not a WHERE clause: a step more than one away from now is never used,
        // however far above the ledger it is.
        expect(await s.advanceTotpStep(a!, 59_012_345_680, nearStep(59_012_345_678))).toBe(false);
        expect(await s.removeTotp(a!, 59_012_345_680, nearStep(59_012_345_678))).toBe(false);
        expect(await s.advanceTotpStep(a!, 59_012_345_679, nearStep(59_012_345_680))).toBe(true);
        expect(await s.findTotpEnrollment(a!)).toMatchObject({ state: 'confirmed', highestUsedStep: 59_012_345_679 });
      }));

    it('concurrent advances with the same step: exactly one wins', () =>
      using(setup, 1, async (s, [a]) => {
        await s.savePendingTotp({ accountId: a!, sealedSecret: 'v1.a', at: 1 });
        await s.confirmTotp({ accountId: a!, sealedSecret: 'v1.a', step: 10, at: 2 });
        const results = await Promise.all(Array.from({ length: 8 }, () => s.advanceTotpStep(a!, 11, nearStep(11))));
        expect(results.filter(Boolean)).toHaveLength(1);
      }));

    it('removeTotp deletes a confirmed factor only with a step above the highest used', () =>
      using(setup, 1, async (s, [a]) => {
        expect(await s.removeTotp(a!, 50, nearStep(50))).toBe(false);
        await s.savePendingTotp({ accountId: a!, sealedSecret: 'v1.a', at: 1 });
        expect(await s.removeTotp(a!, 50, nearStep(50))).toBe(false);
        expect((await s.findTotpEnrollment(a!))?.state).toBe('pending');
        await s.confirmTotp({ accountId: a!, sealedSecret: 'v1.a', step: 50, at: 2 });
        expect(await s.removeTotp(a!, 50, nearStep(50))).toBe(false);
        expect(await s.findTotpEnrollment(a!)).not.toBeNull();
        expect(await s.removeTotp(a!, 51, nearStep(51))).toBe(true);
        expect(await s.findTotpEnrollment(a!)).toBeNull();
        // After removal the account can enroll afresh.
        expect(await s.savePendingTotp({ accountId: a!, sealedSecret: 'v1.b', at: 3 })).toBe(true);
      }));

    it('counts attempts on a challenge atomically and keeps challenges apart', () =>
      using(setup, 1, async (s, [a]) => {
        await s.createTotpChallenge({ idHash: hash(1), accountId: a!, expiresAt: 5_000, attempts: 0 });
        await s.createTotpChallenge({ idHash: hash(2), accountId: a!, expiresAt: 6_000, attempts: 0 });
        expect(await s.countTotpChallengeAttempt(hash(3))).toBeNull();
        expect(await s.countTotpChallengeAttempt(hash(1))).toEqual({
          idHash: hash(1),
          accountId: a,
          expiresAt: 5_000,
          attempts: 1,
        });
        const counts = await Promise.all(Array.from({ length: 6 }, () => s.countTotpChallengeAttempt(hash(1))));
        expect(counts.map((c) => c?.attempts).sort((x, y) => x! - y!)).toEqual([2, 3, 4, 5, 6, 7]);
        expect((await s.countTotpChallengeAttempt(hash(2)))?.attempts).toBe(1);
      }));

    it('consumes a challenge once; a consumed challenge is gone', () =>
      using(setup, 1, async (s, [a]) => {
        await s.createTotpChallenge({ idHash: hash(1), accountId: a!, expiresAt: 5_000, attempts: 0 });
        expect(await s.consumeTotpChallenge(hash(9))).toBe(false);
        const results = await Promise.all([s.consumeTotpChallenge(hash(1)), s.consumeTotpChallenge(hash(1))]);
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await s.countTotpChallengeAttempt(hash(1))).toBeNull();
      }));

    it("purges exactly the challenges core's TOTP_CHALLENGE_LAPSED takes, of every account", () =>
      using(setup, 2, async (s, [a, b]) => {
        const now = 5_000;
        const challenges = [
          { idHash: hash(11), accountId: a!, expiresAt: now - 1, attempts: 0 },
          { idHash: hash(12), accountId: b!, expiresAt: now, attempts: 0 },
          { idHash: hash(13), accountId: a!, expiresAt: now + 1, attempts: 0 },
        ];
        for (const c of challenges) await s.createTotpChallenge(c);
        // The expectation is core's filter, pinned: a challenge at its expiry is lapsed (judgeChallenge refuses it).
        const lapsed = challenges.filter((c) => holds(TOTP_CHALLENGE_LAPSED, c, { now }));
        expect(lapsed.map((c) => c.idHash)).toEqual([hash(11), hash(12)]);
        expect(await s.purgeTotpChallenges(now)).toBe(lapsed.length);
        for (const c of challenges)
          expect((await s.countTotpChallengeAttempt(c.idHash))?.attempts ?? null).toBe(lapsed.includes(c) ? null : 1);
      }));

    it('purges challenges expired at or before the given time', () =>
      using(setup, 1, async (s, [a]) => {
        for (const [i, exp] of [
          [1, 1_000],
          [2, 2_000],
          [3, 3_000],
        ] as const) {
          await s.createTotpChallenge({ idHash: hash(i), accountId: a!, expiresAt: exp, attempts: 0 });
        }
        expect(await s.purgeTotpChallenges(2_000)).toBe(2);
        expect(await s.countTotpChallengeAttempt(hash(1))).toBeNull();
        expect(await s.countTotpChallengeAttempt(hash(2))).toBeNull();
        expect((await s.countTotpChallengeAttempt(hash(3)))?.attempts).toBe(1);
        expect(await s.purgeTotpChallenges(2_000)).toBe(0);
      }));
  });
}
