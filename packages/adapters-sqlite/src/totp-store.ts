import type Database from 'better-sqlite3';
import { and, eq, sql } from 'drizzle-orm';
import { filterWhere } from '@strongroom/sql-common';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  TOTP_CHALLENGE_LAPSED,
  type TotpChallengeRecord,
  type TotpEnrollmentRecord,
  type TotpStore,
} from '@strongroom/core';
import { usableStep } from '@strongroom/core/internal';
import { totpChallenges, totpEnrollments } from './schema/totp.js';

const schema = { totpChallenges, totpEnrollments };

/**
 * The {@link TotpStore} over SQLite. The enrollment's compare-and-sets on the used step read the
 * row and ask core's `usableStep` inside one IMMEDIATE transaction (the write lock is taken before
 * the read), so they hold across connections and processes; the other conditional methods are one
 * statement whose WHERE clause is only row identity and state.
 */
export class SqliteTotpStore implements TotpStore {
  readonly db: BetterSQLite3Database<typeof schema>;

  constructor(readonly sqlite: Database.Database) {
    this.db = drizzle(sqlite, { schema });
  }

  async findTotpEnrollment(accountId: string): Promise<TotpEnrollmentRecord | null> {
    return this.db.select().from(totpEnrollments).where(eq(totpEnrollments.accountId, accountId)).get() ?? null;
  }

  async savePendingTotp(p: { accountId: string; sealedSecret: string; at: number }): Promise<boolean> {
    const fresh = {
      state: 'pending' as const,
      sealedSecret: p.sealedSecret,
      highestUsedStep: null,
      createdAt: p.at,
      confirmedAt: null,
    };
    const r = this.db
      .insert(totpEnrollments)
      .values({ accountId: p.accountId, ...fresh })
      .onConflictDoUpdate({
        target: totpEnrollments.accountId,
        set: fresh,
        setWhere: eq(totpEnrollments.state, 'pending'),
      })
      .run();
    return r.changes === 1;
  }

  async confirmTotp(c: { accountId: string; sealedSecret: string; step: number; at: number }): Promise<boolean> {
    const r = this.db
      .update(totpEnrollments)
      .set({ state: 'confirmed', highestUsedStep: c.step, confirmedAt: c.at })
      .where(
        and(
          eq(totpEnrollments.accountId, c.accountId),
          eq(totpEnrollments.state, 'pending'),
          eq(totpEnrollments.sealedSecret, c.sealedSecret),
        ),
      )
      .run();
    return r.changes === 1;
  }

  /** Reads the row under the write lock, asks core whether `step` may be used, and applies `write` if so. */
  #withUsableStep(
    accountId: string,
    step: number,
    at: number,
    write: (tx: BetterSQLite3Database<typeof schema>) => void,
  ): boolean {
    return this.db.transaction(
      (tx) => {
        const row = tx.select().from(totpEnrollments).where(eq(totpEnrollments.accountId, accountId)).get() ?? null;
        if (!usableStep(row, step, at)) return false;
        write(tx);
        return true;
      },
      { behavior: 'immediate' },
    );
  }

  async advanceTotpStep(accountId: string, step: number, at: number): Promise<boolean> {
    return this.#withUsableStep(accountId, step, at, (tx) =>
      tx.update(totpEnrollments).set({ highestUsedStep: step }).where(eq(totpEnrollments.accountId, accountId)).run(),
    );
  }

  async removeTotp(accountId: string, step: number, at: number): Promise<boolean> {
    return this.#withUsableStep(accountId, step, at, (tx) =>
      tx.delete(totpEnrollments).where(eq(totpEnrollments.accountId, accountId)).run(),
    );
  }

  async createTotpChallenge(challenge: TotpChallengeRecord): Promise<void> {
    this.db.insert(totpChallenges).values(challenge).run();
  }

  async countTotpChallengeAttempt(idHash: string): Promise<TotpChallengeRecord | null> {
    return (
      this.db
        .update(totpChallenges)
        .set({ attempts: sql`${totpChallenges.attempts} + 1` })
        .where(eq(totpChallenges.idHash, idHash))
        .returning()
        .get() ?? null
    );
  }

  async consumeTotpChallenge(idHash: string): Promise<boolean> {
    return this.db.delete(totpChallenges).where(eq(totpChallenges.idHash, idHash)).run().changes === 1;
  }

  async purgeTotpChallenges(now: number): Promise<number> {
    return this.db
      .delete(totpChallenges)
      .where(filterWhere(TOTP_CHALLENGE_LAPSED, { now }, (f) => totpChallenges[f]))
      .run().changes;
  }
}
