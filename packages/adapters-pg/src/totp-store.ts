import { and, eq, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { TotpChallengeRecord, TotpEnrollmentRecord, TotpStore } from '@strongroom/core';
import type { PgDb } from './db.js';
import { totpChallenges, totpEnrollments } from './schema/totp.js';

/**
 * The {@link TotpStore} over PostgreSQL, mirroring SqliteTotpStore. Every conditional method is one
 * statement with its condition in the WHERE clause: under READ COMMITTED a second writer waits for
 * the row lock and then re-checks the WHERE against the committed row, so a compare-and-set on
 * the highest used step admits exactly one of two racing requests. Rows affected are counted
 * through RETURNING, which both node-postgres and PGlite support.
 */
export class PgTotpStore implements TotpStore {
  constructor(readonly db: PgDb) {}

  async findTotpEnrollment(accountId: string): Promise<TotpEnrollmentRecord | null> {
    const [r] = await this.db.select().from(totpEnrollments).where(eq(totpEnrollments.accountId, accountId));
    return r ?? null;
  }

  async savePendingTotp(p: { accountId: string; sealedSecret: string; at: number }): Promise<boolean> {
    const fresh = { state: 'pending' as const, sealedSecret: p.sealedSecret, highestUsedStep: null, createdAt: p.at, confirmedAt: null };
    const r = await this.db
      .insert(totpEnrollments)
      .values({ accountId: p.accountId, ...fresh })
      .onConflictDoUpdate({ target: totpEnrollments.accountId, set: fresh, setWhere: eq(totpEnrollments.state, 'pending') })
      .returning({ id: totpEnrollments.accountId });
    return r.length === 1;
  }

  async confirmTotp(c: { accountId: string; sealedSecret: string; step: number; at: number }): Promise<boolean> {
    const r = await this.db
      .update(totpEnrollments)
      .set({ state: 'confirmed', highestUsedStep: c.step, confirmedAt: c.at })
      .where(and(eq(totpEnrollments.accountId, c.accountId), eq(totpEnrollments.state, 'pending'), eq(totpEnrollments.sealedSecret, c.sealedSecret)))
      .returning({ id: totpEnrollments.accountId });
    return r.length === 1;
  }

  #usable(accountId: string, step: number) {
    return and(
      eq(totpEnrollments.accountId, accountId),
      eq(totpEnrollments.state, 'confirmed'),
      or(isNull(totpEnrollments.highestUsedStep), lt(totpEnrollments.highestUsedStep, step)),
    );
  }

  async advanceTotpStep(accountId: string, step: number): Promise<boolean> {
    const r = await this.db
      .update(totpEnrollments)
      .set({ highestUsedStep: step })
      .where(this.#usable(accountId, step))
      .returning({ id: totpEnrollments.accountId });
    return r.length === 1;
  }

  async removeTotp(accountId: string, step: number): Promise<boolean> {
    const r = await this.db.delete(totpEnrollments).where(this.#usable(accountId, step)).returning({ id: totpEnrollments.accountId });
    return r.length === 1;
  }

  async createTotpChallenge(challenge: TotpChallengeRecord): Promise<void> {
    await this.db.insert(totpChallenges).values(challenge);
  }

  async countTotpChallengeAttempt(idHash: string): Promise<TotpChallengeRecord | null> {
    const [r] = await this.db
      .update(totpChallenges)
      .set({ attempts: sql`${totpChallenges.attempts} + 1` })
      .where(eq(totpChallenges.idHash, idHash))
      .returning();
    return r ?? null;
  }

  async consumeTotpChallenge(idHash: string): Promise<boolean> {
    const r = await this.db.delete(totpChallenges).where(eq(totpChallenges.idHash, idHash)).returning({ id: totpChallenges.idHash });
    return r.length === 1;
  }

  async purgeTotpChallenges(before: number): Promise<number> {
    const r = await this.db.delete(totpChallenges).where(lte(totpChallenges.expiresAt, before)).returning({ id: totpChallenges.idHash });
    return r.length;
  }
}
