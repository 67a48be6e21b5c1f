import { and, eq, sql } from 'drizzle-orm';
import { filterWhere } from '@strongroom/sql-common';
import {
  TOTP_CHALLENGE_LAPSED,
  type TotpChallengeRecord,
  type TotpEnrollmentRecord,
  type TotpStore,
} from '@strongroom/core';
import { usableStep } from '@strongroom/core/internal';
import type { PgDb } from './db.js';
import { totpChallenges, totpEnrollments } from './schema/totp.js';

/**
 * The {@link TotpStore} over PostgreSQL, mirroring SqliteTotpStore. The compare-and-sets on the used
 * step lock the enrollment row (SELECT ... FOR UPDATE), ask core's `usableStep`, and write in the
 * same transaction: a second writer waits for the lock and then reads the committed row, so exactly
 * one of two racing requests uses a step. The other conditional methods are one statement whose
 * WHERE clause is only row identity and state. Rows affected are counted
 * through RETURNING, which both node-postgres and PGlite support.
 */
export class PgTotpStore implements TotpStore {
  constructor(readonly db: PgDb) {}

  async findTotpEnrollment(accountId: string): Promise<TotpEnrollmentRecord | null> {
    const [r] = await this.db.select().from(totpEnrollments).where(eq(totpEnrollments.accountId, accountId));
    return r ?? null;
  }

  async savePendingTotp(p: { accountId: string; sealedSecret: string; at: number }): Promise<boolean> {
    const fresh = {
      state: 'pending' as const,
      sealedSecret: p.sealedSecret,
      highestUsedStep: null,
      createdAt: p.at,
      confirmedAt: null,
    };
    const r = await this.db
      .insert(totpEnrollments)
      .values({ accountId: p.accountId, ...fresh })
      .onConflictDoUpdate({
        target: totpEnrollments.accountId,
        set: fresh,
        setWhere: eq(totpEnrollments.state, 'pending'),
      })
      .returning({ id: totpEnrollments.accountId });
    return r.length === 1;
  }

  async confirmTotp(c: { accountId: string; sealedSecret: string; step: number; at: number }): Promise<boolean> {
    const r = await this.db
      .update(totpEnrollments)
      .set({ state: 'confirmed', highestUsedStep: c.step, confirmedAt: c.at })
      .where(
        and(
          eq(totpEnrollments.accountId, c.accountId),
          eq(totpEnrollments.state, 'pending'),
          eq(totpEnrollments.sealedSecret, c.sealedSecret),
        ),
      )
      .returning({ id: totpEnrollments.accountId });
    return r.length === 1;
  }

  /** Locks the row, asks core whether `step` may be used, and applies `write` if so, in one transaction. */
  async #withUsableStep(
    accountId: string,
    step: number,
    at: number,
    write: (tx: Parameters<Parameters<PgDb['transaction']>[0]>[0]) => Promise<unknown>,
  ): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx
        .select()
        .from(totpEnrollments)
        .where(eq(totpEnrollments.accountId, accountId))
        .for('update');
      if (!usableStep(row ?? null, step, at)) return false;
      await write(tx);
      return true;
    });
  }

  async advanceTotpStep(accountId: string, step: number, at: number): Promise<boolean> {
    return this.#withUsableStep(accountId, step, at, (tx) =>
      tx.update(totpEnrollments).set({ highestUsedStep: step }).where(eq(totpEnrollments.accountId, accountId)),
    );
  }

  async removeTotp(accountId: string, step: number, at: number): Promise<boolean> {
    return this.#withUsableStep(accountId, step, at, (tx) =>
      tx.delete(totpEnrollments).where(eq(totpEnrollments.accountId, accountId)),
    );
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
    const r = await this.db
      .delete(totpChallenges)
      .where(eq(totpChallenges.idHash, idHash))
      .returning({ id: totpChallenges.idHash });
    return r.length === 1;
  }

  async purgeTotpChallenges(now: number): Promise<number> {
    const r = await this.db
      .delete(totpChallenges)
      .where(filterWhere(TOTP_CHALLENGE_LAPSED, { now }, (f) => totpChallenges[f]))
      .returning({ id: totpChallenges.idHash });
    return r.length;
  }
}
