import type Database from 'better-sqlite3';
import { and, eq, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type { TotpChallengeRecord, TotpEnrollmentRecord, TotpStore } from '@strongroom/core';
import { totpChallenges, totpEnrollments } from './schema/totp.js';

const schema = { totpChallenges, totpEnrollments };

/**
 * The {@link TotpStore} over SQLite. Every conditional method is one statement whose WHERE clause
 * is the condition, so the compare-and-set holds across connections and processes: SQLite
 * serialises writers, and a statement sees the row as it is when it runs.
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
    const fresh = { state: 'pending' as const, sealedSecret: p.sealedSecret, highestUsedStep: null, createdAt: p.at, confirmedAt: null };
    const r = this.db
      .insert(totpEnrollments)
      .values({ accountId: p.accountId, ...fresh })
      .onConflictDoUpdate({ target: totpEnrollments.accountId, set: fresh, setWhere: eq(totpEnrollments.state, 'pending') })
      .run();
    return r.changes === 1;
  }

  async confirmTotp(c: { accountId: string; sealedSecret: string; step: number; at: number }): Promise<boolean> {
    const r = this.db
      .update(totpEnrollments)
      .set({ state: 'confirmed', highestUsedStep: c.step, confirmedAt: c.at })
      .where(and(eq(totpEnrollments.accountId, c.accountId), eq(totpEnrollments.state, 'pending'), eq(totpEnrollments.sealedSecret, c.sealedSecret)))
      .run();
    return r.changes === 1;
  }

  #usable(accountId: string, step: number) {
    return and(
      eq(totpEnrollments.accountId, accountId),
      eq(totpEnrollments.state, 'confirmed'),
      or(isNull(totpEnrollments.highestUsedStep), lt(totpEnrollments.highestUsedStep, step)),
    );
  }

  async advanceTotpStep(accountId: string, step: number): Promise<boolean> {
    return this.db.update(totpEnrollments).set({ highestUsedStep: step }).where(this.#usable(accountId, step)).run().changes === 1;
  }

  async removeTotp(accountId: string, step: number): Promise<boolean> {
    return this.db.delete(totpEnrollments).where(this.#usable(accountId, step)).run().changes === 1;
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

  async purgeTotpChallenges(before: number): Promise<number> {
    return this.db.delete(totpChallenges).where(lte(totpChallenges.expiresAt, before)).run().changes;
  }
}
