import { and, eq, isNull, sql, TransactionRollbackError } from 'drizzle-orm';
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
import { accountFromRow, BATCH_HOLD_MS, distinct, filterWhere, loadOf, StatementBatch } from '@strongroom/sql-common';
import { namedRowsOf, rowsOf, type PgDb } from './db.js';
import { createLedgerRows } from './quota-store.js';
import { accounts, deviceCohorts, handles, sessions, signingKeys } from './schema/index.js';

/** A session filter's field as the sessions table's column. */
const sessionColumn = (f: 'accountId' | 'closedAt' | 'id') => sessions[f];

const toAccount = (r: typeof accounts.$inferSelect): AccountRecord => accountFromRow(r);
const toSession = (r: typeof sessions.$inferSelect): SessionRecord => ({ ...r });

/**
 * Serialises changes to the signing-key set across every process on the database. Two servers
 * starting at once on an empty table, or two rotations racing, would otherwise each see "no active
 * key" (or retire only the key their snapshot saw) and leave two active keys behind.
 */
const SIGNING_KEY_LOCK = 0x6b657973; // 'keys'

/**
 * The account, session, cohort and signing-key ports over PostgreSQL, mirroring SqliteStore. Every
 * method is one statement or one transaction; under READ COMMITTED, conditions that must hold at
 * write time are put in the UPDATE's WHERE (re-checked by PostgreSQL after any row-lock wait), never
 * read first and written after.
 */
export class PgStore implements AccountStore, SessionLedger, CohortMap, SigningKeyStore {
  // The per-request path (session by id, account by id) and refresh run as named prepared
  // statements: parsed and planned once per connection, and built by drizzle once per process.
  // Measured here, an unprepared drizzle select ran at under a quarter of the prepared rate.
  readonly #byId;
  readonly #accountById;
  readonly #touch;
  // The hot reads and the refresh write of many requests share one statement (see StatementBatch):
  // each request still reads the ledger after it arrived, so a revocation bites on the next one.
  readonly #access: StatementBatch<string, SessionAccess | null>;
  readonly #byTokenHash: StatementBatch<string, SessionRecord | null>;
  readonly #issuance: StatementBatch<{ id: string; tokenHash: string; at: number; staleBefore: number }, boolean>;

  constructor(readonly db: PgDb) {
    this.#byId = db
      .select()
      .from(sessions)
      .where(eq(sessions.id, sql.placeholder('id')))
      .prepare('sr_session_by_id');
    this.#accountById = db
      .select()
      .from(accounts)
      .where(eq(accounts.id, sql.placeholder('id')))
      .prepare('sr_account_by_id');
    this.#touch = db
      .update(sessions)
      .set({ lastUsedAt: sql`${sql.placeholder('at')}` })
      .where(and(eq(sessions.id, sql.placeholder('id')), sql`${sessions.lastUsedAt} <= ${sql.placeholder('stale')}`))
      .prepare('sr_session_touch');
    const accessMany = db
      .select({
        id: sessions.id,
        accountId: sessions.accountId,
        accessFloor: sessions.accessFloor,
        closedAt: sessions.closedAt,
        lastUsedAt: sessions.lastUsedAt,
        account: {
          id: accounts.id,
          address: accounts.address,
          displayName: accounts.displayName,
          createdAt: accounts.createdAt,
          handleUser: handles.user,
        },
      })
      .from(sessions)
      .innerJoin(accounts, eq(accounts.id, sessions.accountId))
      .leftJoin(handles, eq(handles.accountId, accounts.id))
      .where(sql`${sessions.id} = ANY(${sql.placeholder('ids')}::text[])`)
      .prepare('sr_session_access_many');
    this.#access = new StatementBatch(
      async (ids) => {
        const found = new Map(
          (await accessMany.execute({ ids: distinct(ids) })).map(({ id, ...access }) => [id, access as SessionAccess]),
        );
        return ids.map((id) => found.get(id) ?? null);
      },
      { load: loadOf(db), holdMs: BATCH_HOLD_MS },
    );
    const byTokenHashMany = db
      .select()
      .from(sessions)
      .where(sql`${sessions.tokenHash} = ANY(${sql.placeholder('hs')}::text[])`)
      .prepare('sr_session_by_token_many');
    this.#byTokenHash = new StatementBatch(
      async (hashes) => {
        const found = new Map(
          (await byTokenHashMany.execute({ hs: distinct(hashes) })).map((r) => [r.tokenHash, toSession(r)]),
        );
        return hashes.map((h) => found.get(h) ?? null);
      },
      { load: loadOf(db), holdMs: BATCH_HOLD_MS },
    );
    // One UPDATE for the batch; a session refreshed twice in it keeps the later instant (and across
    // batches, GREATEST). Keyed by session and token: an old token and the new one after a password
    // change may meet in one batch, and only the current one matches.
    this.#issuance = new StatementBatch(
      async (items) => {
        const latest = new Map<string, { id: string; tokenHash: string; at: number; staleBefore: number }>();
        for (const item of items) {
          const key = `${item.id} ${item.tokenHash}`;
          const seen = latest.get(key);
          if (seen === undefined || item.at > seen.at) latest.set(key, item);
        }
        const rows = [...latest.values()];
        const updated = await namedRowsOf<{ id: string; token_hash: string }>(
          db,
          'sr_session_issuance_many',
          sql`UPDATE ${sessions} SET refreshed_at = GREATEST(${sessions.refreshedAt}, d.at),
                   last_used_at = CASE WHEN ${sessions.lastUsedAt} <= d.stale THEN GREATEST(${sessions.lastUsedAt}, d.at) ELSE ${sessions.lastUsedAt} END
            FROM unnest(${sql.param(rows.map((r) => r.id))}::text[], ${sql.param(rows.map((r) => r.tokenHash))}::text[], ${sql.param(rows.map((r) => r.at))}::bigint[],
                        ${sql.param(rows.map((r) => r.staleBefore))}::bigint[]) AS d(id, token_hash, at, stale)
            WHERE ${sessions.id} = d.id AND ${sessions.tokenHash} = d.token_hash AND ${sessions.closedAt} IS NULL
            RETURNING ${sessions.id} AS id, ${sessions.tokenHash} AS token_hash`,
        );
        // Each caller hears whether its session was still open, under its token, when the write ran.
        const open = new Set(updated.map((r) => `${r.id} ${r.token_hash}`));
        return items.map(({ id, tokenHash }) => open.has(`${id} ${tokenHash}`));
      },
      { load: loadOf(db), holdMs: BATCH_HOLD_MS },
    );
  }

  // Accounts

  async createAccount(account: AccountRecord): Promise<'created' | 'address_taken'> {
    return this.db.transaction(async (tx) => {
      const r = await tx
        .insert(accounts)
        .values(account)
        .onConflictDoNothing({ target: accounts.addressKey })
        .returning({ id: accounts.id });
      if (r.length !== 1) return 'address_taken';
      await createLedgerRows(tx, [account.id]);
      return 'created';
    });
  }
  async findAccountByAddress(addressKey: string): Promise<AccountRecord | null> {
    const [r] = await this.db.select().from(accounts).where(eq(accounts.addressKey, addressKey));
    return r ? toAccount(r) : null;
  }
  async findAccountById(id: string): Promise<AccountRecord | null> {
    const [r] = await this.#accountById.execute({ id });
    return r ? toAccount(r) : null;
  }
  async setDisplayName(id: string, displayName: string | null): Promise<AccountRecord | null> {
    const [r] = await this.db.update(accounts).set({ displayName }).where(eq(accounts.id, id)).returning();
    return r ? toAccount(r) : null;
  }
  async setLocked(id: string, lockedAt: number | null): Promise<boolean> {
    // Locking is a credential change; unlocking is not.
    const set = lockedAt === null ? { lockedAt } : { lockedAt, credentialsChangedAt: lockedAt };
    const r = await this.db.update(accounts).set(set).where(eq(accounts.id, id)).returning({ id: accounts.id });
    return r.length === 1;
  }
  async changePassword(c: PasswordChange): Promise<boolean> {
    return this.db
      .transaction(async (tx) => {
        // The account's row first, then session rows, as a sign-out-everywhere (closeAllSessions)
        // takes them: taking the caller's session row first, this deadlocked with one (it holds the
        // account's row and closes every session), and with a change from another of its sessions.
        await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, c.accountId)).for('update');
        // A concurrent revocation of the caller's session either committed before (and this matches
        // nothing) or waits for this transaction.
        const reopened = await tx
          .update(sessions)
          // Past every access token issued to the session so far: see PasswordChange.
          .set({
            tokenHash: c.tokenHash,
            accessFloor: sql`GREATEST(${c.at}, ${sessions.refreshedAt} + 1)`,
            authenticatedAt: c.at,
          })
          .where(and(eq(sessions.id, c.sessionId), eq(sessions.accountId, c.accountId), isNull(sessions.closedAt)))
          .returning({ id: sessions.id });
        if (reopened.length !== 1) return false;
        // Only while the credentials are those the current password was checked under: a change that
        // committed meanwhile is seen here (the row is re-read under its lock) and this one undone.
        const stamped =
          c.credentialsChangedAt === null
            ? isNull(accounts.credentialsChangedAt)
            : eq(accounts.credentialsChangedAt, c.credentialsChangedAt);
        const changed = await tx
          .update(accounts)
          .set({ passwordHash: c.passwordHash, credentialsChangedAt: c.at })
          .where(and(eq(accounts.id, c.accountId), stamped))
          .returning({ id: accounts.id });
        if (changed.length !== 1) {
          tx.rollback();
          return false;
        }
        await tx
          .update(sessions)
          .set({ closedAt: c.at })
          .where(
            filterWhere(PASSWORD_CHANGE_CLOSES, { accountId: c.accountId, sessionId: c.sessionId }, sessionColumn),
          );
        return true;
      })
      .catch((e: unknown) => {
        // Rolled back by the body (the credentials changed meanwhile): nothing changed.
        if (e instanceof TransactionRollbackError) return false;
        throw e;
      });
  }

  // Sessions

  async openSession(session: SessionRecord, credentialsChangedAt: number | null): Promise<boolean> {
    // FOR SHARE: a credential change that updated the account's row first makes this wait for its
    // commit and then see the new stamp (nothing inserted); one that comes after waits for this
    // insert's commit and then closes the new session with the others.
    const s = session;
    const inserted = await rowsOf<{ id: string }>(
      this.db,
      sql`WITH account AS (
            SELECT ${accounts.id} FROM ${accounts}
             WHERE ${accounts.id} = ${s.accountId} AND ${accounts.credentialsChangedAt} IS NOT DISTINCT FROM ${credentialsChangedAt}::bigint
               FOR SHARE)
          INSERT INTO ${sessions} (id, account_id, token_hash, cohort_hash, created_at, refreshed_at, last_used_at, access_floor, closed_at, method, authenticated_at)
          SELECT ${s.id}, ${s.accountId}, ${s.tokenHash}, ${s.cohortHash ?? null}, ${s.createdAt}::bigint, ${s.refreshedAt}::bigint, ${s.lastUsedAt}::bigint,
                 ${s.accessFloor}::bigint, ${s.closedAt}::bigint, ${s.method ?? 'password'}, ${s.authenticatedAt}::bigint
            FROM account
          RETURNING id`,
    );
    return inserted.length === 1;
  }
  async findSessionById(id: string): Promise<SessionRecord | null> {
    const [r] = await this.#byId.execute({ id });
    return r ? toSession(r) : null;
  }
  async findSessionAccess(id: string): Promise<SessionAccess | null> {
    return this.#access.run(id);
  }
  async findSessionByTokenHash(tokenHash: string): Promise<SessionRecord | null> {
    return this.#byTokenHash.run(tokenHash);
  }
  async recordIssuance(id: string, tokenHash: string, at: number, staleBefore: number): Promise<boolean> {
    return this.#issuance.run({ id, tokenHash, at, staleBefore });
  }
  async touchSession(id: string, at: number, staleBefore: number): Promise<void> {
    // The staleness test sits in the WHERE, so of several processes touching at once only the
    // first write lands: the once-a-minute coalescing holds across the cluster.
    await this.#touch.execute({ id, at, stale: staleBefore });
  }
  async closeSession(accountId: string, id: string, at: number): Promise<boolean> {
    const r = await this.db
      .update(sessions)
      .set({ closedAt: at })
      .where(and(eq(sessions.id, id), eq(sessions.accountId, accountId), isNull(sessions.closedAt)))
      .returning({ id: sessions.id });
    return r.length === 1;
  }
  async closeAllSessions(accountId: string, at: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      await tx.update(accounts).set({ credentialsChangedAt: at }).where(eq(accounts.id, accountId));
      const r = await tx
        .update(sessions)
        .set({ closedAt: at })
        .where(filterWhere(CREDENTIAL_CHANGE_CLOSES, { accountId }, sessionColumn))
        .returning({ id: sessions.id });
      return r.length;
    });
  }
  async recordAuthentication(id: string, at: number): Promise<boolean> {
    const r = await this.db
      .update(sessions)
      .set({ authenticatedAt: at })
      .where(and(eq(sessions.id, id), isNull(sessions.closedAt)))
      .returning({ id: sessions.id });
    return r.length === 1;
  }
  async listOpenSessions(accountId: string): Promise<SessionRecord[]> {
    const rows = await this.db
      .select()
      .from(sessions)
      .where(and(eq(sessions.accountId, accountId), isNull(sessions.closedAt)))
      .orderBy(sessions.createdAt, sessions.id);
    return rows.map(toSession);
  }

  // Device cohorts

  async recordCohort(accountId: string, cohortHash: string, at: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      const key = and(eq(deviceCohorts.userId, accountId), eq(deviceCohorts.cohortHash, cohortHash));
      // Insert-if-absent, then lock the row: two first sightings racing both end up merging.
      await tx
        .insert(deviceCohorts)
        .values({ userId: accountId, cohortHash, firstSeen: at, lastSeen: at })
        .onConflictDoNothing();
      const [row] = await tx
        .select({ firstSeen: deviceCohorts.firstSeen, lastSeen: deviceCohorts.lastSeen })
        .from(deviceCohorts)
        .where(key)
        .for('update');
      const next = cohortSighting(row ? { cohortHash, ...row } : null, cohortHash, at);
      if (row && (row.firstSeen !== next.firstSeen || row.lastSeen !== next.lastSeen)) {
        await tx.update(deviceCohorts).set({ firstSeen: next.firstSeen, lastSeen: next.lastSeen }).where(key);
      }
    });
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
      .orderBy(deviceCohorts.firstSeen, deviceCohorts.cohortHash);
  }

  // Signing keys

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    return this.db.select().from(signingKeys).orderBy(signingKeys.createdAt, signingKeys.kid);
  }
  async rotateSigningKey(next: SigningKeyRecord, at: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(${SIGNING_KEY_LOCK})`);
      await tx.update(signingKeys).set({ retiredAt: at }).where(isNull(signingKeys.retiredAt));
      await tx.insert(signingKeys).values(next);
    });
  }
  async ensureSigningKey(first: SigningKeyRecord): Promise<SigningKeyRecord[]> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(${SIGNING_KEY_LOCK})`);
      const existing = await tx.select().from(signingKeys).orderBy(signingKeys.createdAt, signingKeys.kid);
      if (existing.length > 0) return existing;
      await tx.insert(signingKeys).values(first);
      return [first];
    });
  }
  async resealSigningKey(kid: string, from: string, to: string): Promise<boolean> {
    const changed = await this.db
      .update(signingKeys)
      .set({ privateKey: to })
      .where(and(eq(signingKeys.kid, kid), eq(signingKeys.privateKey, from)))
      .returning({ kid: signingKeys.kid });
    return changed.length === 1;
  }
}
