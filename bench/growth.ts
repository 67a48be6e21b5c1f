/**
 * The growth mode's store at scale: bulk rows written straight into the server's database (SQLite:
 * one transaction of prepared inserts; PostgreSQL: INSERT ... SELECT over generate_series), then
 * the query plans of the statements on the hot paths, each flagged when it scans a whole table.
 *
 * Seeded: BENCH_GROWTH_ACCOUNTS accounts (default 100,000, each with a quota row),
 * BENCH_GROWTH_SESSIONS sessions spread over them (default 1,000,000, a third closed), and
 * BENCH_GROWTH_UPLOADS upload sessions on the hot account (default 100,000). Seeded upload
 * sessions are finished ones (Expired or Cancelled, past their expiry), the rows a long-lived
 * account leaves behind: they hold no reservation, so the ledger stays exact.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Argon2Hasher } from '@strongroom/adapters-node';
import { OPEN_STATES } from '@strongroom/core';
import { PASSWORD } from './lib.js';
import { uploaderAccount } from './uploads.js';

export interface SeedCounts {
  accounts: number;
  sessions: number;
  uploads: number;
}

export function seedCounts(): SeedCounts {
  const n = (name: string, fallback: number) => {
    const raw = process.env[name];
    const value = raw === undefined || raw === '' ? fallback : Number(raw);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${raw}`);
    return value;
  };
  return { accounts: n('BENCH_GROWTH_ACCOUNTS', 100_000), sessions: n('BENCH_GROWTH_SESSIONS', 1_000_000), uploads: n('BENCH_GROWTH_UPLOADS', 100_000) };
}

/** Where the server under test keeps its rows: its data dir (SQLite) or its database URL. */
export interface Target {
  dataDir: string;
  pgUrl?: string | undefined;
}

/** UUID-shaped ids, distinct per kind of row, sorting before every id the server mints. */
const TAG = { account: '8001', session: '8002', upload: '8003' } as const;
const seedId = (tag: string, i: number) => `00000000-0000-7000-${tag}-${i.toString(16).padStart(12, '0')}`;
const DAY = 86_400_000;
const OPEN = `(${OPEN_STATES.map((s) => `'${s}'`).join(', ')})`;

async function seedSqlite(dataDir: string, hot: string, c: SeedCounts, passwordHash: string): Promise<void> {
  const db = new Database(join(dataDir, 'strongroom.db'));
  db.pragma('busy_timeout = 30000');
  try {
    const now = Date.now();
    const account = db.prepare('INSERT INTO accounts (id, address, address_key, password_hash, display_name, created_at, locked_at) VALUES (?, ?, ?, ?, NULL, ?, NULL)');
    const quota = db.prepare('INSERT INTO quota_accounts (account_id) VALUES (?)');
    const session = db.prepare(
      `INSERT INTO sessions (id, account_id, token_hash, cohort_hash, created_at, refreshed_at, last_used_at, access_floor, closed_at, method)
       VALUES (?, ?, ?, NULL, ?, ?, ?, 0, ?, 'password')`,
    );
    const upload = db.prepare(
      `INSERT INTO upload_sessions (id, uploader_id, payer_id, kind, declared_size, state, created_at, expires_at) VALUES (?, ?, ?, 'original', 1024, ?, ?, ?)`,
    );
    db.transaction(() => {
      for (let i = 0; i < c.accounts; i++) {
        const id = seedId(TAG.account, i);
        account.run(id, `seed-${i}@example.org`, `seed-${i}@example.org`, passwordHash, now - 30 * DAY + i);
        quota.run(id);
      }
      for (let i = 0; i < c.sessions; i++) {
        const at = now - 10 * DAY + i;
        const tokenHash = createHash('sha256').update(`seed-session-${i}`).digest('hex');
        session.run(seedId(TAG.session, i), seedId(TAG.account, i % c.accounts), tokenHash, at, at, at, i % 3 === 0 ? at + 1 : null);
      }
      for (let i = 0; i < c.uploads; i++) {
        const at = now - 2 * DAY + i;
        upload.run(seedId(TAG.upload, i), hot, hot, i % 2 === 0 ? 'Expired' : 'Cancelled', at, at + 3_600_000);
      }
    })();
  } finally {
    db.close();
  }
}

async function withPg<T>(url: string, f: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await f(client);
  } finally {
    await client.end();
  }
}

async function seedPg(url: string, hot: string, c: SeedCounts, passwordHash: string): Promise<void> {
  const id = (tag: string) => `'00000000-0000-7000-${tag}-' || lpad(to_hex(g), 12, '0')`;
  await withPg(url, async (db) => {
    await db.query('BEGIN');
    await db.query(
      `INSERT INTO accounts (id, address, address_key, password_hash, created_at)
       SELECT ${id(TAG.account)}, 'seed-' || g || '@example.org', 'seed-' || g || '@example.org', $1, $2::bigint - ${30 * DAY} + g
       FROM generate_series(0, $3::int - 1) g`,
      [passwordHash, Date.now(), c.accounts],
    );
    await db.query(`INSERT INTO quota_accounts (account_id) SELECT ${id(TAG.account)} FROM generate_series(0, $1::int - 1) g`, [c.accounts]);
    await db.query(
      `INSERT INTO sessions (id, account_id, token_hash, created_at, refreshed_at, last_used_at, access_floor, closed_at, method)
       SELECT ${id(TAG.session)}, '00000000-0000-7000-${TAG.account}-' || lpad(to_hex(g % $2::int), 12, '0'),
              encode(sha256(convert_to('seed-session-' || g, 'UTF8')), 'hex'), t, t, t, 0, CASE WHEN g % 3 = 0 THEN t + 1 END, 'password'
       FROM generate_series(0, $1::int - 1) g, LATERAL (SELECT $3::bigint - ${10 * DAY} + g AS t) x`,
      [c.sessions, c.accounts, Date.now()],
    );
    await db.query(
      `INSERT INTO upload_sessions (id, uploader_id, payer_id, kind, declared_size, state, created_at, expires_at)
       SELECT ${id(TAG.upload)}, $2, $2, 'original', 1024, CASE WHEN g % 2 = 0 THEN 'Expired' ELSE 'Cancelled' END, t, t + 3600000
       FROM generate_series(0, $1::int - 1) g, LATERAL (SELECT $3::bigint - ${2 * DAY} + g AS t) x`,
      [c.uploads, hot, Date.now()],
    );
    await db.query('COMMIT');
    // A long-lived deployment has had autovacuum's statistics for a while; a just-seeded one has not.
    await db.query('ANALYZE');
  });
}

export interface Grown {
  hotAccountId: string;
  /** The hot account's address; it signs in with the bench password. */
  hotAddress: string;
  summary: string;
}

/** Registers the hot account through the API, then seeds the store around it. */
export async function prepareGrowth(url: string, target: Target, counts: SeedCounts): Promise<Grown> {
  const label = `bench-hot-${Date.now()}`;
  const hot = await uploaderAccount(url, label);
  // Seeded accounts carry a real argon2id hash of the bench password, so any of them can sign in.
  const passwordHash = await new Argon2Hasher().hash(PASSWORD);
  const started = performance.now();
  if (target.pgUrl) await seedPg(target.pgUrl, hot.accountId, counts, passwordHash);
  else await seedSqlite(target.dataDir, hot.accountId, counts, passwordHash);
  const seconds = (performance.now() - started) / 1000;
  const n = (x: number) => x.toLocaleString('en-US');
  return {
    hotAccountId: hot.accountId,
    hotAddress: `${label}@example.org`,
    summary: `seeded ${n(counts.accounts)} accounts, ${n(counts.sessions)} sessions, ${n(counts.uploads)} upload sessions on the hot account in ${seconds.toFixed(1)} s`,
  };
}

export interface Plan {
  store: string;
  name: string;
  sql: string;
  plan: string[];
  fullScan: boolean;
  /** Milliseconds of one execution on the seeded store (PostgreSQL: its Execution Time). */
  ms: number;
  /** Index rows or table rows read and thrown away, where the plan says (PostgreSQL). */
  removed: number;
}

/**
 * A statement is flagged slow above this (BENCH_EXPLAIN_SLOW_MS, default 1 ms) or when it throws
 * away more than 1,000 rows: an index search that still walks a range of dead rows is no full
 * scan, yet grows with the store all the same.
 */
export const SLOW_MS = Number(process.env.BENCH_EXPLAIN_SLOW_MS ?? 1);
export const isSlow = (p: Plan) => p.ms > SLOW_MS || p.removed > 1000;

/** A hot-path statement: `$n` placeholders for the values a request brings, and those values. */
interface HotStatement {
  name: string;
  sql: string;
  params: (string | number | string[] | number[])[];
}

/** A value as an SQL literal (both stores' syntax for these types). */
function literal(v: HotStatement['params'][number]): string {
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return `'${v.replace(/'/g, "''")}'`;
  const items = (v as (string | number)[]).map((x) => literal(x));
  return `ARRAY[${items.join(',')}]`;
}

/** The statement with its values written in (how SQLite's plans are asked for, and how the report shows it). */
const withValues = (s: HotStatement) => s.sql.replace(/\$(\d+)/g, (_, n: string) => literal(s.params[Number(n) - 1]!));

/**
 * The statements each hot path runs, as the adapters write them at this commit (SQLite's are its
 * prepared statements; PostgreSQL's drizzle builds the same shapes, with the payer row taken FOR
 * UPDATE). Parameters are filled with real values from the seeded store.
 */
function hotStatements(v: { sessionId: string; tokenHash: string; hot: string; address: string; now: number }, pgStyle: boolean): HotStatement[] {
  return [
    {
      name: 'authenticated request: session access join',
      sql: `SELECT s.account_id, s.access_floor, s.closed_at, s.last_used_at, a.address, a.display_name, a.created_at FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.id = $1`,
      params: [v.sessionId],
    },
    { name: 'authenticated request: touch session', sql: `UPDATE sessions SET last_used_at = $1 WHERE id = $2 AND last_used_at <= $3`, params: [v.now, v.sessionId, v.now - 60_000] },
    { name: 'refresh: session by token hash', sql: `SELECT * FROM sessions WHERE token_hash = $1`, params: [v.tokenHash] },
    { name: 'refresh: record issuance', sql: `UPDATE sessions SET refreshed_at = $1, last_used_at = $1 WHERE id = $2 AND closed_at IS NULL`, params: [v.now, v.sessionId] },
    { name: 'sign-in: account by address', sql: `SELECT * FROM accounts WHERE address_key = $1`, params: [v.address] },
    { name: 'upload open: payer ledger row', sql: `SELECT * FROM quota_accounts WHERE account_id = $1${pgStyle ? ' FOR UPDATE' : ''}`, params: [v.hot] },
    {
      name: "upload open: expire the payer's lapsed sessions",
      sql: `UPDATE upload_sessions SET state = 'Expired' WHERE payer_id = $1 AND state IN ${OPEN} AND expires_at <= $2 RETURNING declared_size`,
      params: [v.hot, v.now],
    },
    { name: 'upload open: blob by content hash', sql: `SELECT content_hash, size, charged_to, peer, stored_at FROM blobs WHERE content_hash = $1`, params: ['0'.repeat(64)] },
    {
      name: 'upload open: insert the upload session',
      sql: `INSERT INTO upload_sessions (id, uploader_id, payer_id, kind, declared_size, state, created_at, expires_at) VALUES ('explain-probe', $1, $1, 'original', 1024, 'Pending', $2, $3)`,
      params: [v.hot, v.now, v.now + 3_600_000],
    },
    ...(pgStyle
      ? [
          { name: 'upload open: ensure the ledger row', sql: `INSERT INTO quota_accounts (account_id) VALUES ($1) ON CONFLICT DO NOTHING`, params: [v.hot] },
          { name: 'upload open: reserve and stamp', sql: `UPDATE quota_accounts SET reserved = reserved + 1024, hard_since = NULL WHERE account_id = $1`, params: [v.hot] },
        ]
      : [
          // SQLite's grouped openings: one upsert per payer (adapters-sqlite quota-store.ts, reserveOpenings).
          {
            name: "upload open: the payer's reservations (upsert)",
            sql: `INSERT INTO quota_accounts (account_id, reserved, hard_since) VALUES ($1, 1024, NULL) ON CONFLICT (account_id) DO UPDATE SET reserved = reserved + excluded.reserved, hard_since = excluded.hard_since`,
            params: [v.hot],
          },
        ]),
    ...(pgStyle ? pgBatchedStatements(v) : []),
  ];
}

/**
 * PostgreSQL's batched shapes (StatementBatch and the grouped openings in adapters-pg), with a
 * batch of real keys and the hot account's group.
 */
function pgBatchedStatements(v: { sessionId: string; tokenHash: string; hot: string; now: number }): HotStatement[] {
  const ids = [v.sessionId, seedId(TAG.session, 2), seedId(TAG.session, 3)];
  return [
    {
      name: 'batched: session access of a turn',
      sql: `SELECT s.id, s.account_id, s.access_floor, s.closed_at, s.last_used_at, a.id, a.address, a.display_name, a.created_at, h.user_name
            FROM sessions s JOIN accounts a ON a.id = s.account_id LEFT JOIN handles h ON h.account_id = a.id WHERE s.id = ANY($1::text[])`,
      params: [ids],
    },
    { name: 'batched: sessions by token hash', sql: `SELECT * FROM sessions WHERE token_hash = ANY($1::text[])`, params: [[v.tokenHash, '0'.repeat(64)]] },
    {
      name: 'batched: issuance stamps',
      sql: `UPDATE sessions SET refreshed_at = d.at, last_used_at = d.at FROM unnest($1::text[], $2::bigint[]) AS d(id, at)
            WHERE sessions.id = d.id AND sessions.closed_at IS NULL`,
      params: [ids, [v.now, v.now, v.now]],
    },
    {
      name: 'batched: device listing instants of a turn',
      sql: `SELECT account_id, device_id, added_at FROM directory_devices WHERE (account_id, device_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
      params: [[v.hot, v.hot], ['bench', 'other']],
    },
    {
      name: 'grouped openings: lock, expire, look up hashes',
      sql: `WITH locked AS (
              INSERT INTO quota_accounts (account_id) SELECT id FROM (SELECT unnest($1::text[]) AS id
                UNION SELECT sponsor_id FROM quota_accounts WHERE account_id = ANY($1::text[]) AND sponsor_id IS NOT NULL) AS t ORDER BY id
              ON CONFLICT (account_id) DO UPDATE SET account_id = excluded.account_id RETURNING *
            ), expired AS (
              UPDATE upload_sessions SET state = 'Expired' WHERE payer_id IN (SELECT account_id FROM locked) AND state IN ${OPEN} AND expires_at <= $2
              RETURNING payer_id, declared_size
            )
            SELECT 'a', account_id, reserved FROM locked UNION ALL SELECT 'e', payer_id, sum(declared_size) FROM expired GROUP BY payer_id
            UNION ALL SELECT 'b', content_hash, NULL FROM blobs WHERE content_hash = ANY($3::text[])`,
      params: [[v.hot], v.now, ['0'.repeat(64)]],
    },
  ];
}

/** A plan line that reads a whole table (SQLite: SCAN without an index; PostgreSQL: Seq Scan). */
const sqliteScan = (line: string) => /\bSCAN \w+/.test(line) && !/USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY|CONSTANT ROW/.test(line);
const pgScan = (line: string) => /Seq Scan on/.test(line);

/**
 * Plans of the hot-path statements on the seeded store. SQLite: EXPLAIN QUERY PLAN, plus the
 * statement run once in a rolled-back transaction, timed. PostgreSQL: EXPLAIN (ANALYZE, BUFFERS)
 * in a rolled-back transaction, so writes are measured without keeping them.
 */
export async function explainHotPaths(target: Target, hot: string): Promise<Plan[]> {
  const now = Date.now();
  const values = { sessionId: seedId(TAG.session, 1), tokenHash: createHash('sha256').update('seed-session-1').digest('hex'), hot, address: 'seed-1@example.org', now };
  if (target.pgUrl) {
    return withPg(target.pgUrl, async (db) => {
      const plans: Plan[] = [];
      for (const s of hotStatements(values, true)) {
        // Prepared and run the way the server's pool runs them: with the one plan made without the
        // values (adapters-pg open.ts, GENERIC_PLANS), so a plan that only a value makes good shows.
        await db.query(`PREPARE hot_path AS ${s.sql}`);
        await db.query('BEGIN');
        try {
          await db.query('SET LOCAL plan_cache_mode = force_generic_plan');
          const r = await db.query(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE hot_path(${s.params.map(literal).join(', ')})`);
          const plan = r.rows.map((row: Record<string, string>) => row['QUERY PLAN']!);
          const ms = Number(/Execution Time: ([\d.]+) ms/.exec(plan.join('\n'))?.[1] ?? 0);
          const removed = plan.reduce((n, l) => n + Number(/Rows Removed by (?:Filter|Index Recheck): (\d+)/.exec(l)?.[1] ?? 0), 0);
          plans.push({ store: 'postgresql', name: s.name, sql: withValues(s), plan, fullScan: plan.some(pgScan), ms, removed });
        } finally {
          await db.query('ROLLBACK');
          await db.query('DEALLOCATE hot_path');
        }
      }
      return plans;
    });
  }
  const db = new Database(join(target.dataDir, 'strongroom.db'));
  db.pragma('busy_timeout = 30000');
  try {
    return hotStatements(values, false).map((hot) => {
      const s = { name: hot.name, sql: withValues(hot) };
      const rows = db.prepare(`EXPLAIN QUERY PLAN ${s.sql}`).all() as { detail: string }[];
      const plan = rows.map((r) => r.detail);
      const stmt = db.prepare(s.sql);
      db.exec('BEGIN IMMEDIATE');
      const started = performance.now();
      let ms = 0;
      try {
        if (stmt.reader) stmt.all();
        else stmt.run();
      } finally {
        ms = performance.now() - started;
        db.exec('ROLLBACK');
        plan.push(`(ran once in a rolled-back transaction: ${ms.toFixed(3)} ms)`);
      }
      return { store: 'sqlite', name: s.name, sql: s.sql, plan, fullScan: plan.some(sqliteScan), ms, removed: 0 };
    });
  } finally {
    db.close();
  }
}
