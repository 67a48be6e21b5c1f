import type Database from 'better-sqlite3';
import { and, eq, isNull, sql } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type {
  AccountRecord,
  AccountStore,
  CohortMap,
  CohortRecord,
  PasswordChange,
  SessionLedger,
  SessionRecord,
  SigningKeyRecord,
  SigningKeyStore,
} from '@strongroom/core';
import * as schema from './schema/index.js';
import { accounts, deviceCohorts, sessions, signingKeys } from './schema/index.js';

type Db = BetterSQLite3Database<typeof schema>;

const toAccount = (r: typeof accounts.$inferSelect): AccountRecord => ({ ...r });
const toSession = (r: typeof sessions.$inferSelect): SessionRecord => ({ ...r });

/**
 * The account, session, cohort and signing-key ports over SQLite. better-sqlite3 is synchronous,
 * so every multi-statement method runs in one transaction with nothing interleaved. Statements on
 * the per-request path are prepared once.
 */
export class SqliteStore implements AccountStore, SessionLedger, CohortMap, SigningKeyStore {
  readonly db: Db;
  readonly #byId;
  readonly #byTokenHash;
  readonly #accountById;
  readonly #touch;

  constructor(readonly sqlite: Database.Database) {
    this.db = drizzle(sqlite, { schema });
    this.#byId = this.db.select().from(sessions).where(eq(sessions.id, sql.placeholder('id'))).prepare();
    this.#byTokenHash = this.db.select().from(sessions).where(eq(sessions.tokenHash, sql.placeholder('h'))).prepare();
    this.#accountById = this.db.select().from(accounts).where(eq(accounts.id, sql.placeholder('id'))).prepare();
    this.#touch = this.db
      .update(sessions)
      .set({ lastUsedAt: sql`${sql.placeholder('at')}` })
      .where(and(eq(sessions.id, sql.placeholder('id')), sql`${sessions.lastUsedAt} <= ${sql.placeholder('stale')}`))
      .prepare();
  }

  // Accounts

  async createAccount(account: AccountRecord): Promise<'created' | 'address_taken'> {
    const r = this.db.insert(accounts).values(account).onConflictDoNothing({ target: accounts.addressKey }).run();
    return r.changes === 1 ? 'created' : 'address_taken';
  }
  async findAccountByAddress(addressKey: string): Promise<AccountRecord | null> {
    const r = this.db.select().from(accounts).where(eq(accounts.addressKey, addressKey)).get();
    return r ? toAccount(r) : null;
  }
  async findAccountById(id: string): Promise<AccountRecord | null> {
    const r = this.#accountById.get({ id });
    return r ? toAccount(r) : null;
  }
  async setDisplayName(id: string, displayName: string | null): Promise<AccountRecord | null> {
    const r = this.db.update(accounts).set({ displayName }).where(eq(accounts.id, id)).returning().get();
    return r ? toAccount(r) : null;
  }
  async setLocked(id: string, lockedAt: number | null): Promise<boolean> {
    return this.db.update(accounts).set({ lockedAt }).where(eq(accounts.id, id)).run().changes === 1;
  }
  async changePassword(c: PasswordChange): Promise<boolean> {
    return this.db.transaction((tx) => {
      const reopened = tx
        .update(sessions)
        .set({ tokenHash: c.tokenHash, accessFloor: c.at })
        .where(and(eq(sessions.id, c.sessionId), eq(sessions.accountId, c.accountId), isNull(sessions.closedAt)))
        .run();
      if (reopened.changes !== 1) return false;
      tx.update(accounts).set({ passwordHash: c.passwordHash }).where(eq(accounts.id, c.accountId)).run();
      tx.update(sessions)
        .set({ closedAt: c.at })
        .where(and(eq(sessions.accountId, c.accountId), isNull(sessions.closedAt), sql`${sessions.id} <> ${c.sessionId}`))
        .run();
      return true;
    });
  }

  // Sessions

  async insertSession(session: SessionRecord): Promise<void> {
    this.db.insert(sessions).values(session).run();
  }
  async findSessionById(id: string): Promise<SessionRecord | null> {
    const r = this.#byId.get({ id });
    return r ? toSession(r) : null;
  }
  async findSessionByTokenHash(tokenHash: string): Promise<SessionRecord | null> {
    const r = this.#byTokenHash.get({ h: tokenHash });
    return r ? toSession(r) : null;
  }
  async recordIssuance(id: string, at: number): Promise<void> {
    this.db.update(sessions).set({ refreshedAt: at, lastUsedAt: at }).where(and(eq(sessions.id, id), isNull(sessions.closedAt))).run();
  }
  async touchSession(id: string, at: number, staleBefore: number): Promise<void> {
    this.#touch.run({ id, at, stale: staleBefore });
  }
  async closeSession(accountId: string, id: string, at: number): Promise<boolean> {
    const r = this.db
      .update(sessions)
      .set({ closedAt: at })
      .where(and(eq(sessions.id, id), eq(sessions.accountId, accountId), isNull(sessions.closedAt)))
      .run();
    return r.changes === 1;
  }
  async closeAllSessions(accountId: string, at: number): Promise<number> {
    return this.db.update(sessions).set({ closedAt: at }).where(and(eq(sessions.accountId, accountId), isNull(sessions.closedAt))).run().changes;
  }
  async listOpenSessions(accountId: string): Promise<SessionRecord[]> {
    return this.db.select().from(sessions).where(and(eq(sessions.accountId, accountId), isNull(sessions.closedAt))).all().map(toSession);
  }

  // Device cohorts

  async recordCohort(accountId: string, cohortHash: string, at: number): Promise<void> {
    this.db
      .insert(deviceCohorts)
      .values({ userId: accountId, cohortHash, firstSeen: at, lastSeen: at })
      .onConflictDoUpdate({ target: [deviceCohorts.userId, deviceCohorts.cohortHash], set: { lastSeen: at } })
      .run();
  }
  async listCohorts(accountId: string): Promise<CohortRecord[]> {
    return this.db
      .select({ cohortHash: deviceCohorts.cohortHash, firstSeen: deviceCohorts.firstSeen, lastSeen: deviceCohorts.lastSeen })
      .from(deviceCohorts)
      .where(eq(deviceCohorts.userId, accountId))
      .orderBy(deviceCohorts.firstSeen)
      .all();
  }

  // Signing keys

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    return this.db.select().from(signingKeys).all();
  }
  async rotateSigningKey(next: SigningKeyRecord, at: number): Promise<void> {
    this.db.transaction((tx) => {
      tx.update(signingKeys).set({ retiredAt: at }).where(isNull(signingKeys.retiredAt)).run();
      tx.insert(signingKeys).values(next).run();
    });
  }
  async ensureSigningKey(first: SigningKeyRecord): Promise<SigningKeyRecord[]> {
    return this.db.transaction((tx) => {
      const existing = tx.select().from(signingKeys).all();
      if (existing.length > 0) return existing;
      tx.insert(signingKeys).values(first).run();
      return [first];
    });
  }
}
