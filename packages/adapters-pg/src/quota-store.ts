import { and, asc, eq, gt, inArray, isNull, type SQL, type SQLWrapper, sql } from 'drizzle-orm';
import {
  assetChanges,
  linkChanges,
  decideAssetTransition,
  decideCompletion,
  decideOpenGroup,
  payerIdOf,
  ok,
  type AssetAction,
  type AssetBlob,
  type AssetCatalog,
  type AssetRecord,
  type BlobReference,
  type BlobRecord,
  type CompleteOutcome,
  type CompleteUpload,
  type MetadataEditRefusal,
  type MetadataReplace,
  type TrashedAsset,
  type LinkRecord,
  type NewUpload,
  type OpenRefusal,
  type QuotaAccountRecord,
  type QuotaLedger,
  type QuotaLimits,
  type QuotaPolicy,
  type Result,
  type SweepResult,
  type SweptBlob,
  type UploadSessionRecord,
  type UploadSessions,
  DROP_LAPSED,
  UPLOAD_IN_FLIGHT,
  UPLOAD_LAPSED,
} from '@strongroom/core';
import {
  decideMetadataReplace,
  EMPTY_TRASH_CANDIDATE_STATES,
  ledgerRecordWith,
  peerKey,
  settledHardSince,
} from '@strongroom/core/internal';
import {
  BATCH_HOLD_MS,
  loadOf,
  filterWhere,
  OPEN_STATE_SQL,
  quotaAccountFromRow,
  sqlStringList,
  StatementBatch,
} from '@strongroom/sql-common';
import { isDeadlock, namedTransaction, RenderedStatement, retrying, rowsOf, type PgDb } from './db.js';
import { appendSyncChanges, PendingSync } from './sync-store.js';
import { assetBlobs, assets, blobs, federatedRefs, quotaAccounts, uploadSessions } from './schema/quota.js';
import { syncChanges } from './schema/sync.js';
import { linkDrops, links } from './schema/sharing.js';

type AccountRow = typeof quotaAccounts.$inferSelect;
type AssetRow = typeof assets.$inferSelect;

/** The WHERE that finds open sessions fast; which states are open is core's to say. */
const OPEN = sql.raw(OPEN_STATE_SQL);
/** Core's upload filters over this table, with the instant bound (a value, or a prepared query's placeholder). */
const inFlight = (now: number | SQLWrapper): SQL => filterWhere(UPLOAD_IN_FLIGHT, { now }, (f) => uploadSessions[f]);
const lapsed = (now: number | SQLWrapper): SQL => filterWhere(UPLOAD_LAPSED, { now }, (f) => uploadSessions[f]);
const TRASH_CANDIDATES = sql.raw(sqlStringList(EMPTY_TRASH_CANDIDATE_STATES));

/**
 * Finalize, metadata replacement and federated caching take this lock shared; the sweep takes it
 * exclusive. Without it, the sweep's "no reference names this blob" could be judged while a
 * finalize is adding the first reference to that blob in a transaction not yet committed.
 */
const BLOB_INDEX_LOCK = 0x626c6f62; // 'blob'

/**
 * Groups of openings in flight at once in this process. One: a group's rows stay locked until its
 * COMMIT, so a second group of the same process for the same payers only waits, and meanwhile
 * every new arrival joins the next group instead. Measured (paired A/B, 50 clients): one in flight
 * opened 9.2k sessions a second for one account and 7.4k over 1,000 accounts; two, 7.1k and 5.8k;
 * four, 3.1k and 5.0k. Other processes on the database still run their own groups alongside.
 */
const MAX_OPEN_GROUPS_IN_FLIGHT = 1;

/** How often a link revocation runs before its error is final (see revokeLink). */
const REVOKE_ATTEMPTS = 3;

/** How often a group of openings runs before its refusal or error is final (see #openGroup). */
const OPEN_GROUP_ATTEMPTS = 4;

/** How often a metadata edit runs before its error is final (see replaceMetadata). */
const METADATA_EDIT_ATTEMPTS = 3;

interface Opening {
  readonly request: NewUpload;
  /** A guest drop: its upload token's hash, recorded with the session. */
  readonly tokenHash: string | null;
  readonly policy: QuotaPolicy;
  readonly now: number;
}
type Opened = Result<UploadSessionRecord, OpenRefusal>;

/** A quota_accounts row as a raw statement returns it (column names, bigints possibly as strings). */
interface AccountSqlRow {
  account_id: string;
  charged: string | number;
  reserved: string | number;
  open_uploads: number;
  custom_limits: number;
  soft_limit: string | number | null;
  hard_limit: string | number | null;
  hard_since: string | number | null;
  suspended_at: string | number | null;
  sponsor_id: string | null;
  trash_activity_at: string | number | null;
}

/** A payer changed under a transaction's locks to a row sorting before one it holds: run it again. */
class PayerMoved extends Error {}

/**
 * Accounts a group of openings needs whose quota rows do not exist yet (an account's first upload,
 * or a new sponsor's): the group is rolled back, the rows are created outside it and it runs again.
 */
class QuotaRowsMissing extends Error {
  constructor(readonly ids: readonly string[]) {
    super('quota rows missing');
  }
}
/**
 * Makes these accounts' ledger rows exist; a new row is the zero record, as no row is, so writing
 * one early decides nothing. Every path that needs a row goes through here. An account's is
 * written with the account (registration, a first OpenID sign-in; a sponsored account's with its
 * sponsor): the opening lock only locks, so an account without a row rolls back its first group
 * of openings, every other opening in it included, to create one (accounts from before rows were
 * written with them still do). Rows go in the order given: callers that lock them pass id order.
 */
export async function createLedgerRows(db: PgDb, accountIds: readonly string[]): Promise<void> {
  if (accountIds.length === 0) return;
  await db
    .insert(quotaAccounts)
    .values(accountIds.map((accountId) => ({ accountId })))
    .onConflictDoNothing();
}

const payerMovedOrDeadlock = (error: unknown): boolean => error instanceof PayerMoved || isDeadlock(error);

const num = (v: string | number | null): number | null => (v === null ? null : Number(v));
function quotaAccountFromSqlRow(r: AccountSqlRow): QuotaAccountRecord {
  return quotaAccountFromRow(r.account_id, {
    charged: Number(r.charged),
    reserved: Number(r.reserved),
    customLimits: r.custom_limits,
    softLimit: num(r.soft_limit),
    hardLimit: num(r.hard_limit),
    hardSince: num(r.hard_since),
    suspendedAt: num(r.suspended_at),
    sponsorId: r.sponsor_id,
    trashActivityAt: num(r.trash_activity_at),
  });
}

/**
 * One row of `lockAndRead`, by what it holds: a locked account's ledger row ('account'), or what a
 * payer's lapsed sessions released ('expired': their bytes in `reserved`, how many in `open_uploads`).
 */
interface OpenReadRow extends AccountSqlRow {
  row_kind: 'account' | 'expired';
}

/**
 * The first statement of a group of openings: locks the uploaders' rows and their sponsors' as
 * last committed, in one key-ordered pass (SELECT ... FOR UPDATE), and expires the lapsed open
 * sessions those accounts pay for. One round trip instead of two. How many sessions are open is the
 * row's `open_uploads` less the expired ones: counting them cost a scan as long as the pile.
 * Expiry reads the statement's snapshot: a session another group changed meanwhile is re-checked
 * by PostgreSQL against its latest version (and skipped if no longer open), so none is released
 * twice. `withSponsors` false locks exactly `ids` (the late sponsors).
 *
 * It locks, and does not create: an account without a row yet is simply not returned (see
 * QuotaRowsMissing). Creating rows here (INSERT ... ON CONFLICT DO UPDATE, as this statement once
 * did) writes a new version of every row it locks, which the group's write then replaces again:
 * in a pgbench of the two shapes on this machine, that halved the transactions per second.
 *
 * The rows to lock and the lapsed sessions are both found by `= ANY (ARRAY(...))`, not
 * `IN (SELECT ...)`. Each connection plans this statement once (GENERIC_PLANS in open.ts), on its
 * first opening, when on a new deployment the tables have no statistics yet. Planned then, the IN
 * forms read whole what they were matched against, for the connection's life:
 * - the lapsed sessions: the locked rows joined to a scan of the whole open-session index bounded
 *   by expiry alone, as long as the library's pile of open sessions (2 ms a group at 40,000 open
 *   sessions, measured by bench/);
 * - the rows to lock: every account's ledger row (createLedgerRows writes one per account), read
 *   in full and hashed against the wanted ids, once a group.
 * An array is an index condition on the index's first column whatever the statistics say
 * (plans.test.ts).
 */
function lockAndRead(withSponsors: boolean) {
  const ids = sql.placeholder('ids');
  const wanted = withSponsors
    ? sql`SELECT unnest(${ids}::text[]) AS id
          UNION SELECT sponsor_id FROM ${quotaAccounts} WHERE account_id = ANY(${ids}::text[]) AND sponsor_id IS NOT NULL`
    : sql`SELECT unnest(${ids}::text[]) AS id`;
  return new RenderedStatement<{ ids: string[]; latest: number }>(sql`WITH locked AS (
      SELECT * FROM ${quotaAccounts} WHERE account_id = ANY (ARRAY(${wanted})) ORDER BY account_id FOR UPDATE
    ), expired AS (
      UPDATE ${uploadSessions} SET state = 'Expired'
      WHERE ${uploadSessions.payerId} = ANY (ARRAY(SELECT account_id FROM locked)) AND ${lapsed(sql.placeholder('latest'))}
      RETURNING payer_id, declared_size
    )
    SELECT 'account' AS row_kind, account_id, charged, reserved, open_uploads, custom_limits, soft_limit, hard_limit, hard_since, suspended_at, sponsor_id, trash_activity_at FROM locked
    UNION ALL
    SELECT 'expired', payer_id, NULL, sum(declared_size), count(*)::int, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM expired GROUP BY payer_id`);
}
export const LOCK_AND_READ = lockAndRead(true);
const LOCK_LATE_SPONSORS = lockAndRead(false);

/**
 * The fields of a new session WRITE_OPENINGS inserts, by their names in UploadSessionRecord; each
 * column's name and SQL type come from the schema.
 */
const SESSION_COLUMNS = [
  'id',
  'uploaderId',
  'payerId',
  'kind',
  'declaredSize',
  'contentHash',
  'sourcePeer',
  'albumId',
  'intentId',
  'dropLinkIdHash',
  'state',
  'receivedSize',
  'receivedHash',
  'assetId',
  'createdAt',
  'expiresAt',
] as const satisfies readonly (keyof UploadSessionRecord & keyof typeof uploadSessions)[];

interface OpeningsWrite {
  readonly sessions: readonly UploadSessionRecord[];
  readonly moved: readonly string[];
  readonly delta: readonly number[];
  readonly openDelta: readonly number[];
  readonly hardSince: readonly (number | null)[];
}

/**
 * The second: every new session inserted and every moved payer's counters set, in one statement.
 * The new sessions travel as one JSON array of the records themselves, read back by
 * json_to_recordset under their field names: one native JSON.stringify per group, where sixteen
 * arrays cost sixteen maps over the group and node-postgres's escaping of every element into an
 * array literal.
 */
export const WRITE_OPENINGS = new RenderedStatement<{
  sessions: string;
  moved: readonly string[];
  delta: readonly number[];
  openDelta: readonly number[];
  hardSince: readonly (number | null)[];
}>(sql`WITH inserted AS (
      INSERT INTO ${uploadSessions} (${sql.join(
        SESSION_COLUMNS.map((key) => sql.identifier(uploadSessions[key].name)),
        sql`, `,
      )})
      SELECT ${sql.join(
        SESSION_COLUMNS.map((key) => sql.identifier(key)),
        sql`, `,
      )} FROM json_to_recordset(${sql.placeholder('sessions')}::json) AS s(${sql.join(
        SESSION_COLUMNS.map((key) => sql`${sql.identifier(key)} ${sql.raw(uploadSessions[key].getSQLType())}`),
        sql`, `,
      )})
      RETURNING 1
    ), counters AS (
      UPDATE ${quotaAccounts} AS q SET reserved = q.reserved + d.delta, open_uploads = q.open_uploads + d.open_delta, hard_since = d.hard_since
      FROM unnest(${sql.placeholder('moved')}::text[], ${sql.placeholder('delta')}::bigint[], ${sql.placeholder('openDelta')}::int[], ${sql.placeholder('hardSince')}::bigint[]) AS d(id, delta, open_delta, hard_since)
      WHERE q.account_id = d.id
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM inserted) AS inserted, (SELECT count(*) FROM counters) AS counters`);

function writeOpenings(w: OpeningsWrite) {
  return WRITE_OPENINGS.with({
    sessions: JSON.stringify(w.sessions),
    moved: w.moved,
    delta: w.delta,
    openDelta: w.openDelta,
    hardSince: w.hardSince,
  });
}

/**
 * The quota ledger, upload sessions and asset references over PostgreSQL. Every decision is core's
 * (`decideOpenGroup`, `decideCompletion`, `decideMetadataReplace`, `settledHardSince`); what is
 * here is locking and SQL. SQLite serialises writers on one lock; here each decision that checks a
 * limit holds the paying account's `quota_accounts` row (SELECT ... FOR UPDATE) from its read to
 * its commit, so creations and metadata edits for one account queue while other accounts proceed,
 * and no two can pass a limit together under READ COMMITTED.
 *
 * Lock order, to stay free of deadlocks: the payer's quota row (several quota rows in key order),
 * then upload session rows, then asset rows. Counters only ever move by `col = col + delta` in the same transaction as the rows
 * they summarise.
 */
export class PgQuotaStore implements QuotaLedger, UploadSessions, AssetCatalog {
  readonly #opens: StatementBatch<Opening, Opened>;
  /** Groups of openings rolled back to create a missing ledger row (for tests and the bench's curiosity). */
  groupsMissingRows = 0;

  constructor(readonly db: PgDb) {
    this.#opens = new StatementBatch((openings) => this.#openGroups(openings), {
      maxInFlight: MAX_OPEN_GROUPS_IN_FLIGHT,
      load: loadOf(db),
      holdMs: BATCH_HOLD_MS,
    });
  }

  /**
   * Creates the account's quota row if needed and, either way, locks it until the transaction ends
   * and returns it, in one statement: ON CONFLICT DO UPDATE takes the row lock, so writers for one
   * payer queue here until the holder commits.
   */
  async #lockPayer(tx: PgDb, accountId: string): Promise<AccountRow> {
    const [r] = await tx
      .insert(quotaAccounts)
      .values({ accountId })
      .onConflictDoUpdate({ target: quotaAccounts.accountId, set: { accountId: sql`excluded.account_id` } })
      .returning();
    return r!;
  }

  async #account(tx: PgDb, accountId: string): Promise<QuotaAccountRecord> {
    const [r] = await tx.select().from(quotaAccounts).where(eq(quotaAccounts.accountId, accountId));
    return quotaAccountFromRow(accountId, r);
  }

  /** Brings hard_since in line with the row as it now stands (caller holds the row's lock). */
  async #settle(tx: PgDb, accountId: string, policy: QuotaPolicy, now: number): Promise<number | null> {
    const r = await this.#account(tx, accountId);
    const hardSince = settledHardSince(r, policy, now);
    if (hardSince !== r.hardSince)
      await tx.update(quotaAccounts).set({ hardSince }).where(eq(quotaAccounts.accountId, accountId));
    return hardSince;
  }

  /** Expires the payer's timed-out open sessions and releases their reservations (caller holds the payer row). */
  async #expire(tx: PgDb, payerId: string, now: number): Promise<string[]> {
    const rows = await tx
      .update(uploadSessions)
      .set({ state: 'Expired' })
      .where(and(eq(uploadSessions.payerId, payerId), lapsed(now)))
      .returning({ id: uploadSessions.id, declaredSize: uploadSessions.declaredSize });
    if (rows.length > 0)
      await this.#release(
        tx,
        payerId,
        rows.reduce((n, r) => n + r.declaredSize, 0),
        rows.length,
      );
    return rows.map((r) => r.id);
  }

  /** Sessions that left an open state: their bytes from the payer's reservations, and their count from its open ones. */
  async #release(tx: PgDb, accountId: string, bytes: number, sessions: number): Promise<void> {
    await tx
      .update(quotaAccounts)
      .set({
        reserved: sql`${quotaAccounts.reserved} - ${bytes}`,
        openUploads: sql`${quotaAccounts.openUploads} - ${sessions}`,
      })
      .where(eq(quotaAccounts.accountId, accountId));
  }
  async #addCharged(tx: PgDb, accountId: string, delta: number): Promise<void> {
    await tx
      .update(quotaAccounts)
      .set({ charged: sql`${quotaAccounts.charged} + ${delta}` })
      .where(eq(quotaAccounts.accountId, accountId));
  }

  /** Indexes a blob unless its hash is known (global dedup); charges `chargedTo` only when it is new. */
  async #storeBlob(
    tx: PgDb,
    contentHash: string,
    size: number,
    chargedTo: string,
    peer: string | null,
    now: number,
  ): Promise<boolean> {
    const inserted = await tx
      .insert(blobs)
      .values({ contentHash, size, chargedTo, peer, storedAt: now })
      .onConflictDoNothing()
      .returning({ h: blobs.contentHash });
    if (inserted.length !== 1) return false;
    await createLedgerRows(tx, [chargedTo]);
    await this.#addCharged(tx, chargedTo, size);
    return true;
  }

  async #blob(tx: PgDb, contentHash: string): Promise<BlobRecord | null> {
    const [r] = await tx.select().from(blobs).where(eq(blobs.contentHash, contentHash));
    return r ?? null;
  }

  #blobLock(tx: PgDb, mode: 'shared' | 'exclusive') {
    return mode === 'shared'
      ? tx.execute(sql`SELECT pg_advisory_xact_lock_shared(${BLOB_INDEX_LOCK})`)
      : tx.execute(sql`SELECT pg_advisory_xact_lock(${BLOB_INDEX_LOCK})`);
  }

  // QuotaLedger

  async readLedger(accountId: string, now: number): Promise<QuotaAccountRecord> {
    // Read on every quota check (several times per upload creation): one statement and no lock
    // unless some open session of the account has timed out and must be expired first.
    const [r] = await this.db
      .select({
        row: quotaAccounts,
        due: sql<boolean>`EXISTS (SELECT 1 FROM ${uploadSessions} WHERE ${uploadSessions.payerId} = ${accountId}
          AND ${lapsed(now)})`,
      })
      .from(quotaAccounts)
      .where(eq(quotaAccounts.accountId, accountId));
    // No row means nothing charged and nothing reserved: no session could have reserved without one.
    if (!r) return quotaAccountFromRow(accountId, undefined);
    if (!r.due) return quotaAccountFromRow(accountId, r.row);
    return this.db.transaction(async (tx) => {
      await this.#lockPayer(tx, accountId);
      await this.#expire(tx, accountId, now);
      return this.#account(tx, accountId);
    });
  }
  async settleHardSince(accountId: string, policy: QuotaPolicy, now: number): Promise<number | null> {
    return this.db.transaction(async (tx) => {
      const [locked] = await tx
        .select({ id: quotaAccounts.accountId })
        .from(quotaAccounts)
        .where(eq(quotaAccounts.accountId, accountId))
        .for('update');
      return locked ? this.#settle(tx, accountId, policy, now) : null;
    });
  }
  async setLimits(accountId: string, limits: QuotaLimits | null): Promise<void> {
    const values = { customLimits: limits ? 1 : 0, softLimit: limits?.soft ?? null, hardLimit: limits?.hard ?? null };
    await this.db
      .insert(quotaAccounts)
      .values({ accountId, ...values })
      .onConflictDoUpdate({ target: quotaAccounts.accountId, set: values });
  }
  async setSuspended(accountId: string, suspendedAt: number | null): Promise<void> {
    await this.db
      .insert(quotaAccounts)
      .values({ accountId, suspendedAt })
      .onConflictDoUpdate({ target: quotaAccounts.accountId, set: { suspendedAt } });
  }
  async findBlob(contentHash: string): Promise<BlobRecord | null> {
    return this.#blob(this.db, contentHash);
  }
  async listBlobs(after: string | null, limit: number): Promise<BlobRecord[]> {
    const q = this.db.select().from(blobs);
    return (after === null ? q : q.where(gt(blobs.contentHash, after))).orderBy(asc(blobs.contentHash)).limit(limit);
  }
  async listChargedBlobs(accountId: string): Promise<BlobRecord[]> {
    return this.db
      .select()
      .from(blobs)
      .where(eq(blobs.chargedTo, accountId))
      .orderBy(blobs.storedAt, blobs.contentHash);
  }
  async evictFederated(receiver: string, peer: string, contentHash: string): Promise<boolean> {
    const r = await this.db
      .delete(federatedRefs)
      .where(
        and(
          eq(federatedRefs.receiver, receiver),
          eq(federatedRefs.peer, peer),
          eq(federatedRefs.contentHash, contentHash),
        ),
      )
      .returning({ h: federatedRefs.contentHash });
    return r.length === 1;
  }
  async sweep(policy: QuotaPolicy, now: number): Promise<SweepResult> {
    return this.db.transaction(async (tx): Promise<SweepResult> => {
      await this.#blobLock(tx, 'exclusive');
      // Every quota row the sweep may move is locked first, in one key-ordered pass (the store's
      // lock order): the payers of lapsed sessions, and the accounts charged for the blobs no
      // reference will name once the lapsed drops go. Locking the credited rows after deleting
      // the drops held an asset row while waiting for its owner's quota row, the reverse of a
      // purge's order, and locking them after the payers in a second pass crossed openings and
      // sponsor changes that lock a payee and its sponsor together.
      const payers = await tx
        .selectDistinct({ payerId: uploadSessions.payerId })
        .from(uploadSessions)
        .where(lapsed(now));
      const lapsedDrop = filterWhere(DROP_LAPSED, { now }, (f) => assets[f]);
      const notCached = sql`NOT EXISTS (SELECT 1 FROM ${federatedRefs} f WHERE f.content_hash = ${blobs.contentHash})`;
      const credited = await tx
        .selectDistinct({ accountId: blobs.chargedTo })
        .from(blobs)
        .where(
          and(
            sql`NOT EXISTS (SELECT 1 FROM ${assetBlobs} r JOIN ${assets} ON ${assets.id} = r.asset_id
                            WHERE r.content_hash = ${blobs.contentHash} AND (${lapsedDrop}) IS NOT TRUE)`,
            notCached,
          ),
        );
      const locked = [...new Set([...payers.map((p) => p.payerId), ...credited.map((c) => c.accountId)])].sort();
      for (const accountId of locked) await this.#lockPayer(tx, accountId);
      const expiredUploads: string[] = [];
      for (const { payerId } of [...payers].sort((a, b) => (a.payerId < b.payerId ? -1 : 1)))
        expiredUploads.push(...(await this.#expire(tx, payerId, now)));
      await tx.delete(assets).where(lapsedDrop);
      // A blob whose last reference a purge dropped after the read above is charged to a row not
      // locked here: it waits for the next sweep rather than take that row out of order.
      const gone =
        locked.length === 0
          ? []
          : await tx
              .delete(blobs)
              .where(
                and(
                  inArray(blobs.chargedTo, locked),
                  sql`NOT EXISTS (SELECT 1 FROM ${assetBlobs} r WHERE r.content_hash = ${blobs.contentHash})`,
                  notCached,
                ),
              )
              .returning({ contentHash: blobs.contentHash, size: blobs.size, chargedTo: blobs.chargedTo });
      const swept: SweptBlob[] = gone.sort((a, b) =>
        a.contentHash < b.contentHash ? -1 : a.contentHash > b.contentHash ? 1 : 0,
      );
      const credits = new Map<string, number>();
      for (const b of swept) credits.set(b.chargedTo, (credits.get(b.chargedTo) ?? 0) + b.size);
      for (const [accountId, size] of [...credits].sort(([a], [b]) => (a < b ? -1 : 1)))
        await this.#addCharged(tx, accountId, -size);
      const moved = new Set([...payers.map((p) => p.payerId), ...credits.keys()]);
      for (const accountId of [...moved].sort()) await this.#settle(tx, accountId, policy, now);
      return { swept, expiredUploads };
    });
  }

  // UploadSessions

  /**
   * Upload-session creation, the hottest writer, in groups (a StatementBatch, one group in flight):
   * the openings that arrive together share one transaction of four round trips (BEGIN, lock
   * every row involved with the expiries and the hash lookup, insert the sessions and move the
   * counters, COMMIT), decided by core's `decideOpenGroup` exactly as one-at-a-time openings in
   * arrival order would have been. One at a time, each opening held its payer's row for six round
   * trips, so openings for one account queued behind each other at about 400 a second.
   */
  async openUpload(request: NewUpload, policy: QuotaPolicy, now: number): Promise<Opened> {
    return this.#opens.run({ request, tokenHash: null, policy, now });
  }
  /** A drop joins a group like any opening: its link, session, reservation and drop record commit together. */
  async openDrop(
    request: NewUpload & { readonly dropLinkIdHash: string },
    tokenHash: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Opened> {
    return this.#opens.run({ request, tokenHash, policy, now });
  }
  /**
   * Holds the link owner's quota row (every drop through the link locks it, its uploader, to open,
   * and every change of the owner's sponsor locks it too), then revokes and cancels the link's
   * drops still uploading. The payers of those drops (the owner's payer when each opened, which a
   * sponsor change since may have made another account) are locked with it, in one key-ordered
   * pass before the link and session rows: releasing them afterwards took a quota row behind
   * session rows, the reverse of a finalize. Holding the owner's payer instead, as read before any
   * lock, let a drop open through the new payer after a sponsor change, its session uncancelled on
   * the revoked link. The drops' payers are read again under the owner's row, final now: one that
   * was not locked (a drop opened between the read and the lock) is locked in key order when it
   * sorts after every row held, and otherwise the revocation runs again (the last attempt takes
   * it out of order instead).
   */
  async revokeLink(
    ownerId: string,
    linkIdHash: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<{ revoked: boolean; cancelled: string[] }> {
    return retrying(REVOKE_ATTEMPTS, payerMovedOrDeadlock, (mayRestart) =>
      this.#revokeLinkOnce(ownerId, linkIdHash, policy, now, mayRestart),
    );
  }
  async #revokeLinkOnce(
    ownerId: string,
    linkIdHash: string,
    policy: QuotaPolicy,
    now: number,
    mayRestart: boolean,
  ): Promise<{ revoked: boolean; cancelled: string[] }> {
    return this.db.transaction(async (tx) => {
      const dropPayers = async () =>
        (
          await tx
            .selectDistinct({ payerId: uploadSessions.payerId })
            .from(uploadSessions)
            .where(and(eq(uploadSessions.dropLinkIdHash, linkIdHash), sql`${uploadSessions.state} IN ${OPEN}`))
        ).map((p) => p.payerId);
      const locked = new Set([ownerId, ...(await dropPayers())]);
      for (const accountId of [...locked].sort()) await this.#lockPayer(tx, accountId);
      const late = (await dropPayers()).filter((id) => !locked.has(id)).sort();
      if (late.length > 0 && mayRestart && late.some((id) => [...locked].some((held) => held > id)))
        throw new PayerMoved();
      for (const accountId of late) await this.#lockPayer(tx, accountId);
      const done = await tx
        .update(links)
        .set({ revokedAt: now })
        .where(and(eq(links.idHash, linkIdHash), eq(links.ownerId, ownerId), sql`${links.revokedAt} IS NULL`))
        .returning({ idHash: links.idHash });
      if (done.length !== 1) return { revoked: false, cancelled: [] };
      const pending = new PendingSync();
      pending.add(ownerId, linkChanges(linkIdHash, true));
      const rows = await tx
        .update(uploadSessions)
        .set({ state: 'Cancelled' })
        .where(and(eq(uploadSessions.dropLinkIdHash, linkIdHash), inFlight(now)))
        .returning({
          id: uploadSessions.id,
          payerId: uploadSessions.payerId,
          declaredSize: uploadSessions.declaredSize,
        });
      const moved = new Map<string, { bytes: number; sessions: number }>();
      for (const r of rows) {
        const m = moved.get(r.payerId) ?? { bytes: 0, sessions: 0 };
        moved.set(r.payerId, { bytes: m.bytes + r.declaredSize, sessions: m.sessions + 1 });
      }
      for (const [payerId, { bytes, sessions }] of [...moved].sort(([a], [b]) => (a < b ? -1 : 1))) {
        await this.#release(tx, payerId, bytes, sessions);
        await this.#settle(tx, payerId, policy, now);
      }
      await pending.flush(tx, now);
      return { revoked: true, cancelled: rows.map((r) => r.id) };
    });
  }

  /**
   * The clear row is locked while still in clear, so a second process starting at once waits and
   * then finds it gone; it is copied under its hash (every column as stored, whatever later
   * migrations add), its references moved and the clear row deleted, in one transaction. Copied,
   * not updated in place: link_drops' foreign key holds the key.
   */
  async rekeyLink(clearId: string, to: { idHash: string; sealedId: string }): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx
        .select()
        .from(links)
        .where(and(eq(links.idHash, clearId), isNull(links.sealedId)))
        .for('update');
      if (!row) return false;
      await tx.insert(links).values({ ...row, idHash: to.idHash, sealedId: to.sealedId });
      await tx.update(linkDrops).set({ linkIdHash: to.idHash }).where(eq(linkDrops.linkIdHash, clearId));
      await tx
        .update(uploadSessions)
        .set({ dropLinkIdHash: to.idHash })
        .where(eq(uploadSessions.dropLinkIdHash, clearId));
      // Its sync entry (the migration that began the log keyed it by the row's key then) moves too.
      await tx
        .update(syncChanges)
        .set({ objectId: to.idHash })
        .where(and(eq(syncChanges.kind, 'link'), eq(syncChanges.objectId, clearId)));
      await tx.delete(links).where(eq(links.idHash, clearId));
      return true;
    });
  }

  /** One group per policy, one after the other (a deployment has one policy; tests may pass several). */
  async #openGroups(openings: readonly Opening[]): Promise<Opened[]> {
    const results: Opened[] = new Array(openings.length);
    for (const policy of new Set(openings.map((o) => o.policy))) {
      const at = openings.flatMap((o, i) => (o.policy === policy ? [i] : []));
      const decided = await this.#openGroup(
        at.map((i) => openings[i]!),
        policy,
      );
      at.forEach((i, k) => (results[i] = decided[k]!));
    }
    return results;
  }

  async #openGroup(group: Opening[], policy: QuotaPolicy): Promise<Opened[]> {
    // A group whose uploader's sponsor changed while it was locking, to a row sorting before one
    // it holds (see below), or that PostgreSQL chose to break a deadlock, was rolled back whole:
    // it simply runs again.
    // An account's first opening (or a new sponsor's) finds no quota row to lock. The rows are
    // created on their own, committed at once, and the group runs again: a fresh row and no row
    // mean the same to every rule, so creating one early changes nothing. Rows are never deleted,
    // so a second miss would need a sponsor set in between; a third is a fault.
    for (let created = 0; ; created++) {
      try {
        return await retrying(OPEN_GROUP_ATTEMPTS, payerMovedOrDeadlock, (mayRestart) =>
          this.#openGroupOnce(group, policy, mayRestart),
        );
      } catch (error) {
        if (!(error instanceof QuotaRowsMissing) || created >= 2) throw error;
        this.groupsMissingRows++;
        await createLedgerRows(this.db, error.ids);
      }
    }
  }

  async #openGroupOnce(group: Opening[], policy: QuotaPolicy, mayRestart: boolean): Promise<Opened[]> {
    // Four statements, and the payers' rows are held for the last three only: lock-and-read, write,
    // COMMIT. Each round trip under the lock is time every other group for those payers waits, so
    // BEGIN and COMMIT ride along with the statements beside them (namedTransaction).
    return namedTransaction(this.db, async (tx) => {
      const uploaderIds = [...new Set(group.map((p) => p.request.uploaderId))];
      // Sessions lapsed by the latest arrival are lapsed for every opening of the group.
      const latest = Math.max(...group.map((p) => p.now));
      const read = await tx.named<OpenReadRow>(
        'sr_open_lock_and_read',
        LOCK_AND_READ.with({ ids: uploaderIds, latest }),
      );
      const rows = new Map<string, QuotaAccountRecord>();
      // Per payer: open sessions as its row counts them (lapsed ones included), and what expiring the lapsed ones released.
      const counted = new Map<string, number>();
      const releasedBy = new Map<string, { bytes: number; sessions: number }>();
      const take = (r: OpenReadRow) => {
        if (r.row_kind === 'account') {
          rows.set(r.account_id, quotaAccountFromSqlRow(r));
          counted.set(r.account_id, Number(r.open_uploads));
        } else releasedBy.set(r.account_id, { bytes: Number(r.reserved), sessions: Number(r.open_uploads) });
      };
      for (const r of read) take(r);
      const unlocked = uploaderIds.filter((id) => !rows.has(id));
      if (unlocked.length > 0) throw new QuotaRowsMissing(unlocked);
      // A sponsor set between the statement's snapshot and its lock is locked (and its lapsed
      // sessions expired) now when it sorts after every row held. One sorting before a held row
      // would be taken against the store's lock order, crossing any writer that takes the payee's
      // and the sponsor's rows in key order (an opening with a fresh snapshot, a metadata edit,
      // the sweep): the group is rolled back and runs again (#openGroup), its snapshot then
      // showing the sponsor; only a last attempt takes it out of order.
      const late = [
        ...new Set(
          uploaderIds.map((id) => rows.get(id)!.sponsorId).filter((id): id is string => id !== null && !rows.has(id)),
        ),
      ];
      if (late.length > 0 && mayRestart) {
        const highest = [...rows.keys()].reduce((a, b) => (a > b ? a : b));
        if (late.some((id) => id < highest)) throw new PayerMoved();
      }
      if (late.length > 0) {
        for (const r of await tx.named<OpenReadRow>(
          'sr_open_lock_late_sponsors',
          LOCK_LATE_SPONSORS.with({ ids: late, latest }),
        ))
          take(r);
        const lateUnlocked = late.filter((id) => !rows.has(id));
        if (lateUnlocked.length > 0) throw new QuotaRowsMissing(lateUnlocked);
      }
      for (const [id, { bytes }] of releasedBy) {
        const row = rows.get(id)!;
        rows.set(id, ledgerRecordWith(row, row.reserved - bytes, row.hardSince));
      }
      const openSessions = new Map([...counted].map(([id, n]) => [id, n - (releasedBy.get(id)?.sessions ?? 0)]));
      // Federated fills and drops only (rare beside plain uploads): their peer bytes and links, read
      // under the payers' locks, which every fill of a payer and every drop of a link's owner takes.
      const fromPeer = new Map<string, number>();
      const linkRows = new Map<string, LinkRecord>();
      for (const { request } of group) {
        const payerId = payerIdOf(rows.get(request.uploaderId)!);
        if (request.sourcePeer !== null && !fromPeer.has(peerKey(payerId, request.sourcePeer))) {
          const [r] = await rowsOf<{ n: string | number }>(
            tx.db,
            sql`SELECT (SELECT coalesce(sum(declared_size), 0) FROM ${uploadSessions} WHERE payer_id = ${payerId} AND source_peer = ${request.sourcePeer}
                          AND ${inFlight(latest)})
                     + (SELECT coalesce(sum(size), 0) FROM ${blobs} WHERE charged_to = ${payerId} AND peer = ${request.sourcePeer}) AS n`,
          );
          fromPeer.set(peerKey(payerId, request.sourcePeer), Number(r?.n ?? 0));
        }
        if (request.dropLinkIdHash !== null && !linkRows.has(request.dropLinkIdHash)) {
          const [l] = await tx.db.select().from(links).where(eq(links.idHash, request.dropLinkIdHash));
          if (l) linkRows.set(l.idHash, { ...l, assetIds: JSON.parse(l.assetIds) as string[] });
        }
      }
      const plan = decideOpenGroup(
        { accounts: rows, openSessions, fromPeer, links: linkRows },
        group.map((p) => ({ request: p.request, now: p.now })),
        policy,
      );
      const sessions = plan.decisions.flatMap((d) => (d.ok ? [d.value.session] : []));
      const drops = plan.decisions.flatMap((d, i) =>
        d.ok && d.value.session.dropLinkIdHash !== null && group[i]!.tokenHash !== null
          ? [
              {
                uploadId: d.value.session.id,
                linkIdHash: d.value.session.dropLinkIdHash,
                ownerId: d.value.session.uploaderId,
                tokenHash: group[i]!.tokenHash!,
                declaredSize: d.value.session.declaredSize,
                createdAt: d.value.session.createdAt,
              },
            ]
          : [],
      );
      // Every payer whose row moved: its reservations by (reserved now - released), its open
      // sessions by (opened - expired), and hard_since as the plan leaves it (as it stands, for a
      // payer whose openings were all refused).
      const moved = [...new Set([...releasedBy.keys(), ...plan.payers.keys()])].sort();
      const delta = moved.map((id) => (plan.payers.get(id)?.reserve ?? 0) - (releasedBy.get(id)?.bytes ?? 0));
      const openDelta = moved.map((id) => (plan.payers.get(id)?.opened ?? 0) - (releasedBy.get(id)?.sessions ?? 0));
      const hardSince = moved.map((id) =>
        plan.payers.has(id) ? plan.payers.get(id)!.hardSince : rows.get(id)!.hardSince,
      );
      // The write is the last statement of a group of plain openings: its COMMIT goes right behind it.
      const writeIsLast = drops.length === 0 && plan.links.size === 0;
      if (sessions.length > 0 || moved.length > 0) {
        const write = writeOpenings({ sessions, moved, delta, openDelta, hardSince });
        await (writeIsLast ? tx.namedThenCommit('sr_open_write', write) : tx.named('sr_open_write', write));
      }
      if (drops.length > 0) await tx.db.insert(linkDrops).values(drops);
      for (const [linkIdHash, bytes] of plan.links)
        await tx.db
          .update(links)
          .set({ acceptedBytes: sql`${links.acceptedBytes} + ${bytes}` })
          .where(eq(links.idHash, linkIdHash));
      return plan.decisions.map((d) => (d.ok ? ok(d.value.session) : d));
    });
  }
  async findUpload(id: string): Promise<UploadSessionRecord | null> {
    const [r] = await this.db.select().from(uploadSessions).where(eq(uploadSessions.id, id));
    return r ?? null;
  }
  async #setUploadState(
    id: string,
    state: 'Uploading' | 'WaitingForProcessing' | 'Pending',
    received: { size: number; hash: string } | null,
    now: number,
  ): Promise<boolean> {
    const r = await this.db
      .update(uploadSessions)
      .set({ state, receivedSize: received?.size ?? null, receivedHash: received?.hash ?? null })
      .where(and(eq(uploadSessions.id, id), inFlight(now)))
      .returning({ id: uploadSessions.id });
    return r.length === 1;
  }
  async markUploading(id: string, now: number): Promise<boolean> {
    return this.#setUploadState(id, 'Uploading', null, now);
  }
  async markReceived(id: string, received: { size: number; hash: string } | null, now: number): Promise<boolean> {
    return this.#setUploadState(id, received ? 'WaitingForProcessing' : 'Pending', received, now);
  }
  async completeUpload(input: CompleteUpload, policy: QuotaPolicy, now: number): Promise<CompleteOutcome> {
    return this.db.transaction(async (tx): Promise<CompleteOutcome> => {
      await this.#blobLock(tx, 'shared');
      const [head] = await tx
        .select({ payerId: uploadSessions.payerId })
        .from(uploadSessions)
        .where(eq(uploadSessions.id, input.uploadId));
      if (!head) return 'not_open';
      const payer = quotaAccountFromRow(head.payerId, await this.#lockPayer(tx, head.payerId));
      // The session row itself: of two racing finalizes, the second sees the first's outcome.
      const [session] = await tx
        .select()
        .from(uploadSessions)
        .where(eq(uploadSessions.id, input.uploadId))
        .for('update');
      // FOR SHARE keeps a concurrent purge from deleting the asset under the new reference.
      const [target] =
        input.asset !== null && 'attachTo' in input.asset
          ? await tx
              .select({ state: assets.state, ownerId: assets.ownerId })
              .from(assets)
              .where(eq(assets.id, input.asset.attachTo))
              .for('share')
          : [];
      const stored = await this.#blob(tx, input.contentHash);
      const plan = decideCompletion(
        { session: session ?? null, storedBlobSize: stored?.size ?? null, attachTarget: target?.state ?? null, payer },
        input,
        policy,
        now,
      );
      if (typeof plan === 'string') return plan;
      if (plan.newBlob)
        await this.#storeBlob(
          tx,
          plan.newBlob.contentHash,
          plan.newBlob.size,
          plan.newBlob.chargedTo,
          plan.newBlob.peer,
          now,
        );
      await tx
        .update(quotaAccounts)
        .set({
          reserved: sql`${quotaAccounts.reserved} - ${plan.release}`,
          openUploads: sql`${quotaAccounts.openUploads} - 1`,
          hardSince: plan.hardSince,
        })
        .where(eq(quotaAccounts.accountId, plan.session.payerId));
      const c = plan.createAsset;
      if (c) await tx.insert(assets).values({ ...c, createdAt: now, trashedAt: null });
      if (plan.reference && plan.assetId !== null)
        await tx.insert(assetBlobs).values({ assetId: plan.assetId, ...plan.reference });
      if (plan.federatedRef) await tx.insert(federatedRefs).values(plan.federatedRef).onConflictDoNothing();
      await tx
        .update(uploadSessions)
        .set({ state: plan.session.state, assetId: plan.assetId })
        .where(eq(uploadSessions.id, plan.session.id));
      if (plan.reference && plan.assetId !== null) {
        if (c)
          await appendSyncChanges(
            tx,
            c.ownerId,
            assetChanges(
              c.id,
              plan.session.id === c.id ? plan.session.albumId : await this.#albumOf(tx, c.id),
              null,
              c.state,
            ),
            now,
          );
        else if (target)
          await appendSyncChanges(
            tx,
            target.ownerId,
            assetChanges(plan.assetId, await this.#albumOf(tx, plan.assetId), target.state, target.state),
            now,
          );
      }
      return { outcome: plan.outcome, session: plan.session };
    });
  }
  async cancelUpload(id: string, policy: QuotaPolicy, now: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [head] = await tx
        .select({ payerId: uploadSessions.payerId })
        .from(uploadSessions)
        .where(eq(uploadSessions.id, id));
      if (!head) return false;
      await this.#lockPayer(tx, head.payerId);
      const [r] = await tx
        .update(uploadSessions)
        .set({ state: 'Cancelled' })
        .where(and(eq(uploadSessions.id, id), inFlight(now)))
        .returning({ payerId: uploadSessions.payerId, declaredSize: uploadSessions.declaredSize });
      if (!r) return false;
      await this.#release(tx, r.payerId, r.declaredSize, 1);
      await this.#settle(tx, r.payerId, policy, now);
      return true;
    });
  }
  async countInFlightUploads(albumId: string, now: number): Promise<number> {
    const [r] = await rowsOf<{ n: string | number }>(
      this.db,
      sql`SELECT count(*) AS n FROM ${uploadSessions} WHERE ${uploadSessions.albumId} = ${albumId} AND ${inFlight(now)}`,
    );
    return Number(r?.n ?? 0);
  }

  // AssetCatalog

  async findAsset(id: string): Promise<AssetRecord | null> {
    const [r] = await this.db.select().from(assets).where(eq(assets.id, id));
    return r ? this.#toAsset(r) : null;
  }
  async blobReferences(contentHash: string, ownerId: string): Promise<BlobReference[]> {
    // By the hash index, then each asset by its key; the album is its original's session's.
    return this.db
      .selectDistinct({
        assetId: assets.id,
        ownerId: assets.ownerId,
        state: assets.state,
        albumId: uploadSessions.albumId,
      })
      .from(assetBlobs)
      .innerJoin(assets, eq(assets.id, assetBlobs.assetId))
      .leftJoin(uploadSessions, eq(uploadSessions.id, assets.id))
      .where(and(eq(assetBlobs.contentHash, contentHash), eq(assets.ownerId, ownerId)))
      .orderBy(asc(assets.id));
  }
  async #toAsset(r: AssetRow): Promise<AssetRecord> {
    const refs = await this.db
      .select({ kind: assetBlobs.kind, contentHash: assetBlobs.contentHash, size: assetBlobs.size })
      .from(assetBlobs)
      .where(eq(assetBlobs.assetId, r.id))
      .orderBy(asc(assetBlobs.seq));
    return { ...r, blobs: refs as AssetBlob[] };
  }
  /**
   * One lifecycle step inside the caller's transaction: the asset row is read with FOR UPDATE (a
   * racing step on the same asset waits here, then reads the row as the winner left it, or no row
   * if it was deleted), core decides, and the write names the row by its id alone.
   */
  async #transition(tx: PgDb, id: string, action: AssetAction, pending: PendingSync): Promise<boolean> {
    const [a] = await tx
      .select({
        state: assets.state,
        trashedAt: assets.trashedAt,
        dropExpiresAt: assets.dropExpiresAt,
        ownerId: assets.ownerId,
      })
      .from(assets)
      .where(eq(assets.id, id))
      .for('update');
    const t = decideAssetTransition(a ?? null, action);
    if (!t.ok) return false;
    // asset_blobs rows go with the asset (ON DELETE CASCADE): the references drop, the bytes stay charged.
    const r =
      t.write === 'delete'
        ? await tx.delete(assets).where(eq(assets.id, id)).returning({ id: assets.id })
        : await tx.update(assets).set(t.next).where(eq(assets.id, id)).returning({ id: assets.id });
    if (r.length !== 1) return false;
    pending.add(
      a!.ownerId,
      assetChanges(id, await this.#albumOf(tx, id), a!.state, t.write === 'delete' ? null : t.next.state),
    );
    return true;
  }
  /** The album an asset lies in: its original's upload session's (core's albums/asset-album.ts). */
  async #albumOf(tx: PgDb, assetId: string): Promise<string | null> {
    const [s] = await tx
      .select({ albumId: uploadSessions.albumId })
      .from(uploadSessions)
      .where(eq(uploadSessions.id, assetId));
    return s?.albumId ?? null;
  }
  /** One lifecycle step in its own transaction, its sync changes appended last. */
  #step(id: string, action: AssetAction, now: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const pending = new PendingSync();
      const done = await this.#transition(tx, id, action, pending);
      await pending.flush(tx, now);
      return done;
    });
  }
  /**
   * A trash, restore or purge and, when it applied, the owner's trash activity, in one transaction.
   * The owner's quota row is locked (created if missing) before the asset row, in the store's lock
   * order; an asset's owner never changes, so it is read from the row before either lock.
   */
  async #trashActivity(id: string, action: AssetAction, now: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [owner] = await rowsOf<{ account_id: string }>(
        tx,
        sql`INSERT INTO ${quotaAccounts} (account_id) SELECT owner_id FROM ${assets} WHERE id = ${id}
            ON CONFLICT (account_id) DO UPDATE SET account_id = excluded.account_id RETURNING account_id`,
      );
      const pending = new PendingSync();
      if (!owner || !(await this.#transition(tx, id, action, pending))) return false;
      await tx.update(quotaAccounts).set({ trashActivityAt: now }).where(eq(quotaAccounts.accountId, owner.account_id));
      await pending.flush(tx, now);
      return true;
    });
  }
  async trashAsset(id: string, now: number): Promise<boolean> {
    return this.#trashActivity(id, { kind: 'trash', now }, now);
  }
  async restoreAsset(id: string, now: number): Promise<boolean> {
    return this.#trashActivity(id, { kind: 'restore' }, now);
  }
  async purgeAsset(id: string, now: number): Promise<boolean> {
    return this.#trashActivity(id, { kind: 'purge' }, now);
  }
  async listTrash(ownerId: string): Promise<TrashedAsset[]> {
    // Narrowed by the (owner, state) index to the states core says empty_trash can take; the album
    // is the original's session's.
    return this.db
      .select({ assetId: assets.id, albumId: uploadSessions.albumId })
      .from(assets)
      .leftJoin(uploadSessions, eq(uploadSessions.id, assets.id))
      .where(and(eq(assets.ownerId, ownerId), sql`${assets.state} IN ${TRASH_CANDIDATES}`))
      .orderBy(asc(assets.id));
  }
  async emptyTrash(ownerId: string, assetIds: readonly string[], now: number): Promise<number> {
    const named = new Set(assetIds);
    return this.db.transaction(async (tx) => {
      // The owner's quota row first (the store's lock order), for its trash activity.
      await this.#lockPayer(tx, ownerId);
      // Candidates narrowed by the (owner, state) index, then to the assets named; each row is then
      // locked, re-read and decided by core (a racing restore may have moved it meanwhile).
      const ids = await tx
        .select({ id: assets.id })
        .from(assets)
        .where(and(eq(assets.ownerId, ownerId), sql`${assets.state} IN ${TRASH_CANDIDATES}`))
        .orderBy(asc(assets.id));
      let n = 0;
      const pending = new PendingSync();
      for (const { id } of ids)
        if (named.has(id) && (await this.#transition(tx, id, { kind: 'empty_trash' }, pending))) n++;
      if (n > 0)
        await tx.update(quotaAccounts).set({ trashActivityAt: now }).where(eq(quotaAccounts.accountId, ownerId));
      await pending.flush(tx, now);
      return n;
    });
  }
  async adoptDrop(id: string, now: number): Promise<boolean> {
    return this.#step(id, { kind: 'adopt', now }, now);
  }
  async discardDrop(id: string): Promise<boolean> {
    // A pending drop was never synced: its discard records nothing (core's assetChanges), so no instant is needed.
    return this.#step(id, { kind: 'discard' }, 0);
  }
  /**
   * Read, decided by core (`decideMetadataReplace`) and written in one transaction holding the
   * acting account's and its payer's quota rows (the store's lock order: quota rows, in key order,
   * then the asset row): concurrent edits for one payer, on any connection, queue on the payer's
   * row, and each is judged on the ledger as the ones before it left it.
   */
  async replaceMetadata(
    input: MetadataReplace,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<void, MetadataEditRefusal>> {
    // Run again from the start when the payer moved under the locks to a row that sorts before
    // one already held (see #lockWithPayer), or when PostgreSQL chose this edit to break a deadlock.
    return retrying(METADATA_EDIT_ATTEMPTS, payerMovedOrDeadlock, (mayRestart) =>
      this.#replaceMetadataOnce(input, policy, now, mayRestart),
    );
  }
  async #replaceMetadataOnce(
    input: MetadataReplace,
    policy: QuotaPolicy,
    now: number,
    mayRestart: boolean,
  ): Promise<Result<void, MetadataEditRefusal>> {
    return this.db.transaction(async (tx): Promise<Result<void, MetadataEditRefusal>> => {
      await this.#blobLock(tx, 'shared');
      const { account, payer } = await this.#lockWithPayer(tx, input.accountId, now, mayRestart);
      // The asset row: two replacements of one asset queue here, so one metadata reference remains.
      const [a] = await tx
        .select({ state: assets.state, ownerId: assets.ownerId })
        .from(assets)
        .where(eq(assets.id, input.assetId))
        .for('update');
      const metadata = a
        ? await tx
            .select({ size: assetBlobs.size })
            .from(assetBlobs)
            .where(and(eq(assetBlobs.assetId, input.assetId), eq(assetBlobs.kind, 'metadata')))
        : [];
      const stored = await this.#blob(tx, input.contentHash);
      const plan = decideMetadataReplace(
        {
          assetState: a?.state ?? null,
          metadataSizes: metadata.map((m) => m.size),
          account,
          payer,
          storedBlobSize: stored?.size ?? null,
        },
        input,
        policy,
        now,
      );
      if (!plan.ok) return plan;
      const { newBlob, reference, payerId, hardSince } = plan.value;
      if (newBlob) await this.#storeBlob(tx, newBlob.contentHash, newBlob.size, newBlob.chargedTo, null, now);
      await tx.delete(assetBlobs).where(and(eq(assetBlobs.assetId, input.assetId), eq(assetBlobs.kind, 'metadata')));
      await tx.insert(assetBlobs).values({ assetId: input.assetId, ...reference });
      await tx.update(quotaAccounts).set({ hardSince }).where(eq(quotaAccounts.accountId, payerId));
      await appendSyncChanges(
        tx,
        a!.ownerId,
        assetChanges(input.assetId, await this.#albumOf(tx, input.assetId), a!.state, a!.state),
        now,
      );
      return ok(undefined);
    });
  }

  /**
   * Locks (creating where missing) the account's quota row and its payer's, in key order, and
   * expires the payer's lapsed sessions; answers both rows as they then stand. The payer is read
   * before the locks and checked under them: a sponsor change waits on the account's row, and one
   * that committed in between has its new payer locked too, in key order when it sorts after the
   * rows held; when it sorts before one, taking it now would reverse the store's lock order, so the
   * transaction is abandoned (PayerMoved) and run again, its first read then seeing the new payer
   * (`mayRestart` false, on a last attempt, takes it out of order instead).
   */
  async #lockWithPayer(
    tx: PgDb,
    accountId: string,
    now: number,
    mayRestart: boolean,
  ): Promise<{ account: QuotaAccountRecord; payer: QuotaAccountRecord }> {
    const locked = new Map<string, QuotaAccountRecord>();
    let wanted = [accountId, payerIdOf(await this.#account(tx, accountId))];
    for (;;) {
      for (const id of [...new Set(wanted)].sort())
        if (!locked.has(id)) locked.set(id, quotaAccountFromRow(id, await this.#lockPayer(tx, id)));
      const payerId = payerIdOf(locked.get(accountId)!);
      if (!locked.has(payerId) && mayRestart && [...locked.keys()].some((held) => held > payerId))
        throw new PayerMoved();
      if (locked.has(payerId)) {
        if ((await this.#expire(tx, payerId, now)).length > 0) locked.set(payerId, await this.#account(tx, payerId));
        return { account: locked.get(accountId)!, payer: locked.get(payerId)! };
      }
      wanted = [payerId];
    }
  }
}
