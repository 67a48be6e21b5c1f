import type Database from 'better-sqlite3';
import { and, eq, isNull, sql, TransactionRollbackError } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  CREDENTIAL_CHANGE_CLOSES,
  PASSWORD_CHANGE_CLOSES,
  type AccountRecord,
  type AccountStore,
  type CohortMap,
  type CohortRecord,
  type PasswordChange,
  type SessionAccess,
  type SessionLedger,
  type SessionRecord,
  type SigningKeyRecord,
  type SigningKeyStore,
} from '@strongroom/core';
import { cohortSighting } from '@strongroom/core/internal';
import {
  accountFromRow,
  filterWhere,
  groupCommitOf,
  readBatchOf,
  type GroupCommit,
  type ReadBatch,
} from '@strongroom/sql-common';
import * as schema from './schema/index.js';
import { accounts, deviceCohorts, sessions, signingKeys } from './schema/index.js';

/** A session filter's field as the sessions table's column. */
const sessionColumn = (f: 'accountId' | 'closedAt' | 'id') => sessions[f];

type Db = BetterSQLite3Database<typeof schema>;

const toAccount = (r: typeof accounts.$inferSelect): AccountRecord => accountFromRow(r);
const toSession = (r: typeof sessions.$inferSelect): SessionRecord => ({ ...r });

type SessionRow = typeof sessions.$inferSelect;
/** SESSION_SELECT's columns in order, for the raw (array) form of the refresh's read. */
type SessionTuple = [
  id: string,
  accountId: string,
  tokenHash: string,
  cohortHash: string | null,
  createdAt: number,
  refreshedAt: number,
  lastUsedAt: number,
  accessFloor: number,
  closedAt: number | null,
  method: SessionRow['method'],
  authenticatedAt: number,
];
const sessionOfTuple = (r: SessionTuple): SessionRecord => ({
  id: r[0],
  accountId: r[1],
  tokenHash: r[2],
  cohortHash: r[3],
  createdAt: r[4],
  refreshedAt: r[5],
  lastUsedAt: r[6],
  accessFloor: r[7],
  closedAt: r[8],
  method: r[9],
  authenticatedAt: r[10],
});
type AccountRow = typeof accounts.$inferSelect;
const SESSION_SELECT =
  'SELECT id, account_id AS accountId, token_hash AS tokenHash, cohort_hash AS cohortHash, created_at AS createdAt, refreshed_at AS refreshedAt, ' +
  'last_used_at AS lastUsedAt, access_floor AS accessFloor, closed_at AS closedAt, method, authenticated_at AS authenticatedAt FROM sessions';
// Raw mode (rows as arrays) skips building an object keyed by column names for the hottest read.
// Each column costs a property write into the row, so the account's id is not read twice.
type AccessRow = [
  accountId: string,
  accessFloor: number,
  closedAt: number | null,
  lastUsedAt: number,
  address: string | null,
  displayName: string | null,
  createdAt: number,
  handleUser: string | null,
];
const ACCESS_SELECT =
  'SELECT s.account_id, s.access_floor, s.closed_at, s.last_used_at, a.address, a.display_name, a.created_at, h.user_name ' +
  'FROM sessions s JOIN accounts a ON a.id = s.account_id LEFT JOIN handles h ON h.account_id = a.id WHERE s.id = ?';
const ACCOUNT_SELECT =
  'SELECT id, address, address_key AS addressKey, password_hash AS passwordHash, display_name AS displayName, created_at AS createdAt, locked_at AS lockedAt, credentials_changed_at AS credentialsChangedAt, deleted_at AS deletedAt FROM accounts';

/**
 * The account, session, cohort and signing-key ports over SQLite. better-sqlite3 is synchronous,
 * so every multi-statement method runs in one transaction with nothing interleaved. Statements on
 * the per-request path are prepared once.
 */
export class SqliteStore implements AccountStore, SessionLedger, CohortMap, SigningKeyStore {
  readonly db: Db;
  // The per-request path (session by id, account by id) and refresh use raw prepared statements:
  // drizzle's query builder costs several times the read itself at these row counts.
  readonly #byId: Database.Statement<[string], SessionRow>;
  readonly #access: Database.Statement<[string], AccessRow>;
  readonly #byTokenHash: Database.Statement<[string], SessionTuple>;
  readonly #accountById: Database.Statement<[string], AccountRow>;
  readonly #touch: Database.Statement<[number, string, number]>;
  readonly #issuance: Database.Statement<[number, number, number, string, string]>;
  readonly #openSession: Database.Statement<[SessionRecord & { credentialsChangedAt: number | null }]>;
  /** Hot writes (sign-in, refresh, touch) share one fsync per event-loop turn (sql-common's batching). */
  readonly #commits: GroupCommit;
  /** Hot reads (every authenticated request, every refresh) share one read lock per turn (sql-common's batching). */
  readonly #reads: ReadBatch;

  constructor(readonly sqlite: Database.Database) {
    this.#commits = groupCommitOf(sqlite);
    this.#reads = readBatchOf(sqlite);
    this.db = drizzle(sqlite, { schema });
    this.#byId = sqlite.prepare(`${SESSION_SELECT} WHERE id = ?`);
    this.#access = sqlite.prepare<[string], AccessRow>(ACCESS_SELECT).raw(true);
    // Raw like #access (every refresh reads it): the record is built once, from the array.
    this.#byTokenHash = sqlite.prepare<[string], SessionTuple>(`${SESSION_SELECT} WHERE token_hash = ?`).raw(true);
    this.#accountById = sqlite.prepare(`${ACCOUNT_SELECT} WHERE id = ?`);
    this.#touch = sqlite.prepare('UPDATE sessions SET last_used_at = ? WHERE id = ? AND last_used_at <= ?');
    this.#issuance = sqlite.prepare(
      'UPDATE sessions SET refreshed_at = max(refreshed_at, ?), last_used_at = CASE WHEN last_used_at <= ? THEN max(last_used_at, ?) ELSE last_used_at END WHERE id = ? AND token_hash = ? AND closed_at IS NULL',
    );
    // SessionLedger.openSession: `IS` compares null with null. One writer at a time, so the check and
    // the insert see the same account row.
    this.#openSession = sqlite.prepare(
      'INSERT INTO sessions (id, account_id, token_hash, cohort_hash, created_at, refreshed_at, last_used_at, access_floor, closed_at, method, authenticated_at) ' +
        'SELECT @id, @accountId, @tokenHash, @cohortHash, @createdAt, @refreshedAt, @lastUsedAt, @accessFloor, @closedAt, @method, @authenticatedAt ' +
        'WHERE EXISTS (SELECT 1 FROM accounts WHERE id = @accountId AND credentials_changed_at IS @credentialsChangedAt)',
    );
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
    const r = this.#accountById.get(id);
    return r ? toAccount(r) : null;
  }
  async setDisplayName(id: string, displayName: string | null): Promise<AccountRecord | null> {
    const r = this.db.update(accounts).set({ displayName }).where(eq(accounts.id, id)).returning().get();
    return r ? toAccount(r) : null;
  }
  async setLocked(id: string, lockedAt: number | null): Promise<boolean> {
    // Locking is a credential change; unlocking is not.
    const set = lockedAt === null ? { lockedAt } : { lockedAt, credentialsChangedAt: lockedAt };
    return this.db.update(accounts).set(set).where(eq(accounts.id, id)).run().changes === 1;
  }
  async changePassword(c: PasswordChange): Promise<boolean> {
    return rolledBackIsFalse(() =>
      this.db.transaction(
        (tx) => {
          const reopened = tx
            .update(sessions)
            // Past every access token issued to the session so far: see PasswordChange.
            .set({
              tokenHash: c.tokenHash,
              accessFloor: sql`max(${c.at}, ${sessions.refreshedAt} + 1)`,
              authenticatedAt: c.at,
            })
            .where(and(eq(sessions.id, c.sessionId), eq(sessions.accountId, c.accountId), isNull(sessions.closedAt)))
            .run();
          if (reopened.changes !== 1) return false;
          // Only while the credentials are those the current password was checked under.
          const stamped =
            c.credentialsChangedAt === null
              ? isNull(accounts.credentialsChangedAt)
              : eq(accounts.credentialsChangedAt, c.credentialsChangedAt);
          const changed = tx
            .update(accounts)
            .set({ passwordHash: c.passwordHash, credentialsChangedAt: c.at })
            .where(and(eq(accounts.id, c.accountId), stamped))
            .run();
          if (changed.changes !== 1) {
            tx.rollback();
            return false;
          }
          tx.update(sessions)
            .set({ closedAt: c.at })
            .where(
              filterWhere(PASSWORD_CHANGE_CLOSES, { accountId: c.accountId, sessionId: c.sessionId }, sessionColumn),
            )
            .run();
          return true;
        },
        { behavior: 'immediate' },
      ),
    );
  }

  // Sessions

  async openSession(session: SessionRecord, credentialsChangedAt: number | null): Promise<boolean> {
    const row = { ...session, method: session.method ?? 'password', credentialsChangedAt };
    return this.#commits.run(() => this.#openSession.run(row).changes === 1);
  }
  async findSessionById(id: string): Promise<SessionRecord | null> {
    const r = this.#byId.get(id);
    return r ? toSession(r) : null;
  }
  async findSessionAccess(id: string): Promise<SessionAccess | null> {
    const r = await this.#reads.run(() => this.#access.get(id));
    if (!r) return null;
    return {
      accountId: r[0],
      accessFloor: r[1],
      closedAt: r[2],
      lastUsedAt: r[3],
      account: { id: r[0], address: r[4], displayName: r[5], createdAt: r[6], handleUser: r[7] },
    };
  }
  async findSessionByTokenHash(tokenHash: string): Promise<SessionRecord | null> {
    const r = await this.#reads.run(() => this.#byTokenHash.get(tokenHash));
    return r ? sessionOfTuple(r) : null;
  }
  async recordIssuance(id: string, tokenHash: string, at: number, staleBefore: number): Promise<boolean> {
    return this.#commits.run(() => this.#issuance.run(at, staleBefore, at, id, tokenHash).changes === 1);
  }
  async touchSession(id: string, at: number, staleBefore: number): Promise<void> {
    await this.#commits.run(() => this.#touch.run(at, id, staleBefore));
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
    return this.db.transaction(
      (tx) => {
        tx.update(accounts).set({ credentialsChangedAt: at }).where(eq(accounts.id, accountId)).run();
        return tx
          .update(sessions)
          .set({ closedAt: at })
          .where(filterWhere(CREDENTIAL_CHANGE_CLOSES, { accountId }, sessionColumn))
          .run().changes;
      },
      { behavior: 'immediate' },
    );
  }
  async recordAuthentication(id: string, at: number): Promise<boolean> {
    return (
      this.db
        .update(sessions)
        .set({ authenticatedAt: at })
        .where(and(eq(sessions.id, id), isNull(sessions.closedAt)))
        .run().changes === 1
    );
  }
  async listOpenSessions(accountId: string): Promise<SessionRecord[]> {
    return this.db
      .select()
      .from(sessions)
      .where(and(eq(sessions.accountId, accountId), isNull(sessions.closedAt)))
      .all()
      .map(toSession);
  }

  // Device cohorts

  async recordCohort(accountId: string, cohortHash: string, at: number): Promise<void> {
    this.db.transaction(
      (tx) => {
        const key = and(eq(deviceCohorts.userId, accountId), eq(deviceCohorts.cohortHash, cohortHash));
        const row = tx
          .select({ firstSeen: deviceCohorts.firstSeen, lastSeen: deviceCohorts.lastSeen })
          .from(deviceCohorts)
          .where(key)
          .get();
        const next = cohortSighting(row ? { cohortHash, ...row } : null, cohortHash, at);
        tx.insert(deviceCohorts)
          .values({ userId: accountId, ...next })
          .onConflictDoUpdate({
            target: [deviceCohorts.userId, deviceCohorts.cohortHash],
            set: { firstSeen: next.firstSeen, lastSeen: next.lastSeen },
          })
          .run();
      },
      { behavior: 'immediate' },
    );
  }
  async listCohorts(accountId: string): Promise<CohortRecord[]> {
    return this.db
      .select({
        cohortHash: deviceCohorts.cohortHash,
        firstSeen: deviceCohorts.firstSeen,
        lastSeen: deviceCohorts.lastSeen,
      })
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
    this.db.transaction(
      (tx) => {
        tx.update(signingKeys).set({ retiredAt: at }).where(isNull(signingKeys.retiredAt)).run();
        tx.insert(signingKeys).values(next).run();
      },
      { behavior: 'immediate' },
    );
  }
  async ensureSigningKey(first: SigningKeyRecord): Promise<SigningKeyRecord[]> {
    return this.db.transaction(
      (tx) => {
        const existing = tx.select().from(signingKeys).all();
        if (existing.length > 0) return existing;
        tx.insert(signingKeys).values(first).run();
        return [first];
      },
      { behavior: 'immediate' },
    );
  }
  async resealSigningKey(kid: string, from: string, to: string): Promise<boolean> {
    const r = this.db
      .update(signingKeys)
      .set({ privateKey: to })
      .where(and(eq(signingKeys.kid, kid), eq(signingKeys.privateKey, from)))
      .run();
    return r.changes === 1;
  }
}

/** A transaction its body rolled back (`tx.rollback()`) as false; any other failure as it is. */
function rolledBackIsFalse(run: () => boolean): boolean {
  try {
    return run();
  } catch (e) {
    if (e instanceof TransactionRollbackError) return false;
    throw e;
  }
}
