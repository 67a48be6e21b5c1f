import { and, eq, isNull } from 'drizzle-orm';
import {
  claimCodeCheck,
  decideLease,
  mayReleaseLease,
  type LeaseStore,
  type CodeCheckAdmission,
  type ClosedByRestore,
  type DeploymentRecord,
  type DeploymentStore,
  type SessionRecord,
  type TotpRecoveryStore,
  type TotpThrottleState,
  type TotpThrottleStore,
} from '@strongroom/core';
import { refundCodeCheck } from '@strongroom/core/internal';
import type { PgDb } from './db.js';
import { accounts, sessions } from './schema/accounts.js';
import { deployment, leases, totpThrottles } from './schema/second-factor.js';
import { totpChallenges, totpEnrollments } from './schema/totp.js';
import { revokeAllChallenges } from './schema/devices-albums.js';
import { oidcFlows, oidcLoginCodes } from './schema/oidc.js';

const parseTimes = (json: string): TotpThrottleState => ({ wrongCodesAt: JSON.parse(json) as number[] });

/**
 * The wrong-code record and second-factor recovery over PostgreSQL, mirroring the SQLite store.
 * `claimTotpCodeCheck` makes sure the account's row exists (INSERT ... ON CONFLICT DO NOTHING),
 * then locks it (SELECT ... FOR UPDATE) before reading: concurrent claims from any number of
 * processes queue on that lock, and each applies core's rule to the state the previous committed.
 */
export class PgSecondFactorStore implements TotpThrottleStore, TotpRecoveryStore {
  constructor(readonly db: PgDb) {}

  async findTotpThrottle(accountId: string): Promise<TotpThrottleState | null> {
    const [row] = await this.db.select().from(totpThrottles).where(eq(totpThrottles.accountId, accountId));
    return row ? parseTimes(row.wrongCodesAt) : null;
  }

  async claimTotpCodeCheck(accountId: string, at: number): Promise<CodeCheckAdmission> {
    return this.#applyToThrottle(accountId, (state) => claimCodeCheck(state, at));
  }

  async refundTotpCodeCheck(accountId: string, at: number): Promise<void> {
    await this.#applyToThrottle(accountId, (state) => ({
      admission: undefined,
      next: state === null ? null : refundCodeCheck(state, at),
    }));
  }

  /** Locks the account's record, lets core decide on it, writes what it decided: one transaction. */
  async #applyToThrottle<T>(
    accountId: string,
    decide: (state: TotpThrottleState | null) => { admission: T; next: TotpThrottleState | null },
  ): Promise<T> {
    return this.db.transaction(async (tx) => {
      await tx.insert(totpThrottles).values({ accountId, wrongCodesAt: '[]' }).onConflictDoNothing();
      const [row] = await tx.select().from(totpThrottles).where(eq(totpThrottles.accountId, accountId)).for('update');
      const { admission, next } = decide(row ? parseTimes(row.wrongCodesAt) : null);
      if (next !== null)
        await tx
          .update(totpThrottles)
          .set({ wrongCodesAt: JSON.stringify(next.wrongCodesAt) })
          .where(eq(totpThrottles.accountId, accountId));
      return admission;
    });
  }

  async recoverTotp(accountId: string, session: SessionRecord): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const removed = await tx
        .delete(totpEnrollments)
        .where(and(eq(totpEnrollments.accountId, accountId), eq(totpEnrollments.state, 'confirmed')))
        .returning({ accountId: totpEnrollments.accountId });
      if (removed.length !== 1) return false;
      await tx.insert(sessions).values(session);
      await tx.update(accounts).set({ credentialsChangedAt: session.createdAt }).where(eq(accounts.id, accountId));
      return true;
    });
  }
}

/** The deployment record over PostgreSQL: one row, inserted by the first process to start. */
export class PgDeploymentStore implements DeploymentStore, LeaseStore {
  constructor(readonly db: PgDb) {}

  async claimDeployment(first: DeploymentRecord): Promise<DeploymentRecord> {
    // Two processes starting at once: the primary key lets one insert win; both read the winner.
    await this.db
      .insert(deployment)
      .values({ id: 1, ...first })
      .onConflictDoNothing();
    const [row] = await this.db.select().from(deployment).where(eq(deployment.id, 1));
    const { id: _id, ...record } = row!;
    return record;
  }

  async setDeploymentIssuer(change: { issuer: string; issuerConfigured: boolean }): Promise<boolean> {
    const updated = await this.db
      .update(deployment)
      .set(change)
      .where(eq(deployment.id, 1))
      .returning({ id: deployment.id });
    return updated.length === 1;
  }

  async closeEverythingForRestore(at: number): Promise<ClosedByRestore> {
    // Account rows first, then session rows: the order every credential change locks in.
    return this.db.transaction(async (tx) => {
      await tx.update(accounts).set({ credentialsChangedAt: at });
      const closed = await tx
        .update(sessions)
        .set({ closedAt: at })
        .where(isNull(sessions.closedAt))
        .returning({ id: sessions.id });
      const challenges = await tx.delete(totpChallenges).returning({ k: totpChallenges.idHash });
      const revokeAll = await tx.delete(revokeAllChallenges).returning({ k: revokeAllChallenges.challengeHash });
      const codes = await tx.delete(oidcLoginCodes).returning({ k: oidcLoginCodes.codeHash });
      const flows = await tx.delete(oidcFlows).returning({ k: oidcFlows.stateHash });
      return {
        sessions: closed.length,
        secondFactorChallenges: challenges.length,
        revokeAllChallenges: revokeAll.length,
        oidcLoginCodes: codes.length,
        oidcFlows: flows.length,
      };
    });
  }

  /**
   * Makes sure the lease's row exists (a lapsed one nobody holds), locks it, lets core decide,
   * writes what it decided: concurrent takers from any process queue on the row lock.
   */
  async takeLease(name: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await tx.insert(leases).values({ name, holder: '', expiresAt: 0 }).onConflictDoNothing();
      const [current] = await tx.select().from(leases).where(eq(leases.name, name)).for('update');
      const next = decideLease(current ?? null, holder, now, ttlMs);
      if (next === null) return false;
      await tx.update(leases).set(next).where(eq(leases.name, name));
      return true;
    });
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const [current] = await tx.select().from(leases).where(eq(leases.name, name)).for('update');
      if (mayReleaseLease(current ?? null, holder)) await tx.delete(leases).where(eq(leases.name, name));
    });
  }
}
