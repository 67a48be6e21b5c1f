import type { TotpChallengeRecord, TotpEnrollmentRecord, TotpStore } from '../ports/totp-store.js';
import { holds } from '../filters/filter.js';
import { TOTP_CHALLENGE_LAPSED, usableStep } from '../totp/machine.js';

/**
 * The in-memory reference {@link TotpStore}. Each method runs to completion without awaiting, so
 * it is as atomic as the real stores' single statements.
 */
export class MemoryTotpStore implements TotpStore {
  readonly enrollments = new Map<string, TotpEnrollmentRecord>();
  readonly challenges = new Map<string, TotpChallengeRecord>();

  async findTotpEnrollment(accountId: string): Promise<TotpEnrollmentRecord | null> {
    return this.enrollments.get(accountId) ?? null;
  }
  async savePendingTotp(p: { accountId: string; sealedSecret: string; at: number }): Promise<boolean> {
    if (this.enrollments.get(p.accountId)?.state === 'confirmed') return false;
    this.enrollments.set(p.accountId, {
      accountId: p.accountId,
      state: 'pending',
      sealedSecret: p.sealedSecret,
      highestUsedStep: null,
      createdAt: p.at,
      confirmedAt: null,
    });
    return true;
  }
  async confirmTotp(c: { accountId: string; sealedSecret: string; step: number; at: number }): Promise<boolean> {
    const e = this.enrollments.get(c.accountId);
    if (e?.state !== 'pending' || e.sealedSecret !== c.sealedSecret) return false;
    this.enrollments.set(c.accountId, { ...e, state: 'confirmed', highestUsedStep: c.step, confirmedAt: c.at });
    return true;
  }
  async advanceTotpStep(accountId: string, step: number, at: number): Promise<boolean> {
    const e = this.enrollments.get(accountId) ?? null;
    if (e === null || !usableStep(e, step, at)) return false;
    this.enrollments.set(accountId, { ...e, highestUsedStep: step });
    return true;
  }
  async removeTotp(accountId: string, step: number, at: number): Promise<boolean> {
    const e = this.enrollments.get(accountId) ?? null;
    if (!usableStep(e, step, at)) return false;
    this.enrollments.delete(accountId);
    return true;
  }
  async createTotpChallenge(challenge: TotpChallengeRecord): Promise<void> {
    this.challenges.set(challenge.idHash, challenge);
  }
  async countTotpChallengeAttempt(idHash: string): Promise<TotpChallengeRecord | null> {
    const c = this.challenges.get(idHash);
    if (!c) return null;
    const next = { ...c, attempts: c.attempts + 1 };
    this.challenges.set(idHash, next);
    return next;
  }
  async consumeTotpChallenge(idHash: string): Promise<boolean> {
    return this.challenges.delete(idHash);
  }
  async purgeTotpChallenges(now: number): Promise<number> {
    let n = 0;
    for (const [k, c] of this.challenges) {
      if (holds(TOTP_CHALLENGE_LAPSED, c, { now })) {
        this.challenges.delete(k);
        n++;
      }
    }
    return n;
  }
}
