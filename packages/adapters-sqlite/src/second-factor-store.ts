import type Database from 'better-sqlite3';
import { and, eq, isNull } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
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
import { accounts, sessions } from './schema/accounts.js';
import { deployment, leases, totpThrottles } from './schema/second-factor.js';
import { totpChallenges, totpEnrollments } from './schema/totp.js';
import { revokeAllChallenges } from './schema/devices-albums.js';
import { oidcFlows, oidcLoginCodes } from './schema/oidc.js';

const parseTimes = (json: string): TotpThrottleState => ({ wrongCodesAt: JSON.parse(json) as number[] });

/**
 * The wrong-code record and second-factor recovery over SQLite. Each method is one IMMEDIATE
 * transaction: it takes the write lock before reading, so a read-decide-write by another process
 * can never interleave with it (and a busy database waits rather than failing half way).
 */
export class SqliteSecondFactorStore implements TotpThrottleStore, TotpRecoveryStore {
  readonly #db: BetterSQLite3Database;

  constructor(sqlite: Database.Database) {
    this.#db = drizzle(sqlite);
  }

  async findTotpThrottle(accountId: string): Promise<TotpThrottleState | null> {
    const row = this.#db.select().from(totpThrottles).where(eq(totpThrottles.accountId, accountId)).get();
    return row ? parseTimes(row.wrongCodesAt) : null;
  }

  async claimTotpCodeCheck(accountId: string, at: number): Promise<CodeCheckAdmission> {
    return this.#applyToThrottle(accountId, (state) => claimCodeCheck(state, at));
  }

  async refundTotpCodeCheck(accountId: string, at: number): Promise<void> {
    this.#applyToThrottle(accountId, (state) => ({
      admission: undefined,
      next: state === null ? null : refundCodeCheck(state, at),
    }));
  }

  /** Reads the account's record under the write lock, lets core decide, writes what it decided. */
  #applyToThrottle<T>(
    accountId: string,
    decide: (state: TotpThrottleState | null) => { admission: T; next: TotpThrottleState | null },
  ): T {
    return this.#db.transaction(
      (tx) => {
        const row = tx.select().from(totpThrottles).where(eq(totpThrottles.accountId, accountId)).get();
        const { admission, next } = decide(row ? parseTimes(row.wrongCodesAt) : null);
        if (next !== null) {
          const wrongCodesAt = JSON.stringify(next.wrongCodesAt);
          tx.insert(totpThrottles)
            .values({ accountId, wrongCodesAt })
            .onConflictDoUpdate({ target: totpThrottles.accountId, set: { wrongCodesAt } })
            .run();
        }
        return admission;
      },
      { behavior: 'immediate' },
    );
  }

  async recoverTotp(accountId: string, session: SessionRecord): Promise<boolean> {
    return this.#db.transaction(
      (tx) => {
        const removed = tx
          .delete(totpEnrollments)
          .where(and(eq(totpEnrollments.accountId, accountId), eq(totpEnrollments.state, 'confirmed')))
          .run();
        if (removed.changes !== 1) return false;
        tx.insert(sessions).values(session).run();
        tx.update(accounts).set({ credentialsChangedAt: session.createdAt }).where(eq(accounts.id, accountId)).run();
        return true;
      },
      { behavior: 'immediate' },
    );
  }
}

/** The deployment record over SQLite: one row, inserted by the first process to start; and the leases. */
export class SqliteDeploymentStore implements DeploymentStore, LeaseStore {
  readonly #db: BetterSQLite3Database;

  constructor(sqlite: Database.Database) {
    this.#db = drizzle(sqlite);
  }

  async claimDeployment(first: DeploymentRecord): Promise<DeploymentRecord> {
    return this.#db.transaction(
      (tx) => {
        tx.insert(deployment)
          .values({ id: 1, ...first })
          .onConflictDoNothing()
          .run();
        const { id: _id, ...row } = tx.select().from(deployment).where(eq(deployment.id, 1)).get()!;
        return row;
      },
      { behavior: 'immediate' },
    );
  }

  async setDeploymentIssuer(change: { issuer: string; issuerConfigured: boolean }): Promise<boolean> {
    return this.#db.update(deployment).set(change).where(eq(deployment.id, 1)).run().changes === 1;
  }

  async closeEverythingForRestore(at: number): Promise<ClosedByRestore> {
    // One IMMEDIATE transaction: a server started early on the restored copy sees all of it or none.
    return this.#db.transaction(
      (tx) => {
        tx.update(accounts).set({ credentialsChangedAt: at }).run();
        return {
          sessions: tx.update(sessions).set({ closedAt: at }).where(isNull(sessions.closedAt)).run().changes,
          secondFactorChallenges: tx.delete(totpChallenges).run().changes,
          revokeAllChallenges: tx.delete(revokeAllChallenges).run().changes,
          oidcLoginCodes: tx.delete(oidcLoginCodes).run().changes,
          oidcFlows: tx.delete(oidcFlows).run().changes,
        };
      },
      { behavior: 'immediate' },
    );
  }

  /** Reads the lease under the write lock, lets core decide, writes what it decided. */
  async takeLease(name: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
    return this.#db.transaction(
      (tx) => {
        const current = tx.select().from(leases).where(eq(leases.name, name)).get() ?? null;
        const next = decideLease(current, holder, now, ttlMs);
        if (next === null) return false;
        tx.insert(leases)
          .values({ name, ...next })
          .onConflictDoUpdate({ target: leases.name, set: next })
          .run();
        return true;
      },
      { behavior: 'immediate' },
    );
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    this.#db.transaction(
      (tx) => {
        const current = tx.select().from(leases).where(eq(leases.name, name)).get() ?? null;
        if (mayReleaseLease(current, holder)) tx.delete(leases).where(eq(leases.name, name)).run();
      },
      { behavior: 'immediate' },
    );
  }
}
