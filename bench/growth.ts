/**
 * The growth mode's store at scale: bulk rows written straight into the server's database (SQLite:
 * one transaction of prepared inserts; PostgreSQL: INSERT ... SELECT over generate_series), then
 * the query plans of the statements on the hot paths, each flagged when it scans a whole table.
 *
 * Seeded: BENCH_GROWTH_ACCOUNTS accounts (default 100,000, each with a quota row and a device
 * directory of two devices, one in ten with a published handle),
 * BENCH_GROWTH_SESSIONS sessions spread over them (default 1,000,000, a third closed), and
 * BENCH_GROWTH_UPLOADS upload sessions on the hot account (default 100,000). Seeded upload
 * sessions are finished ones (Expired or Cancelled, past their expiry), the rows a long-lived
 * account leaves behind: they hold no reservation, so the ledger stays exact. The hot account also
 * holds BENCH_GROWTH_ASSETS live assets (default 100,000: each an original blob charged to it, and
 * its sync entry), and the sync log BENCH_GROWTH_SYNC entries across the seeded accounts (default
 * 1,000,000: recent removals of assets that are gone, as purges leave them), so the sync page read
 * is planned on a log of that size. The sync mode (sync-scale.ts) also gives the seeded accounts
 * live assets of their own (`otherAssets`, each with its blob and its change).
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Argon2Hasher } from '@strongroom/adapters-node';
import { CONNECTION_SETTINGS } from '@strongroom/adapters-pg';
import { api, PASSWORD } from './lib.js';
import { body as UPLOAD_BODY, uploaderAccount } from './uploads.js';

export interface SeedCounts {
  accounts: number;
  sessions: number;
  uploads: number;
  assets: number;
  syncEntries: number;
  /** Live assets spread over the seeded accounts, each with its blob and its change (the sync mode's store). */
  otherAssets?: number;
}

export function seedCounts(): SeedCounts {
  const n = (name: string, fallback: number) => {
    const raw = process.env[name];
    const value = raw === undefined || raw === '' ? fallback : Number(raw);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${raw}`);
    return value;
  };
  return {
    accounts: n('BENCH_GROWTH_ACCOUNTS', 100_000),
    sessions: n('BENCH_GROWTH_SESSIONS', 1_000_000),
    uploads: n('BENCH_GROWTH_UPLOADS', 100_000),
    assets: n('BENCH_GROWTH_ASSETS', 100_000),
    syncEntries: n('BENCH_GROWTH_SYNC', 1_000_000),
  };
}

/** Where the server under test keeps its rows: its data dir (SQLite) or its database URL. */
export interface Target {
  dataDir: string;
  pgUrl?: string | undefined;
}

/** UUID-shaped ids, distinct per kind of row, sorting before every id the server mints. */
const TAG = { account: '8001', session: '8002', upload: '8003', asset: '8004', gone: '8005', other: '8006' } as const;
const BLOB_BYTES = 1024;
const seedId = (tag: string, i: number) => `00000000-0000-7000-${tag}-${i.toString(16).padStart(12, '0')}`;
const DAY = 86_400_000;

async function seedSqlite(dataDir: string, hot: string, c: SeedCounts, passwordHash: string): Promise<void> {
  const db = new Database(join(dataDir, 'strongroom.db'));
  db.pragma('busy_timeout = 30000');
  try {
    const now = Date.now();
    const account = db.prepare(
      'INSERT INTO accounts (id, address, address_key, password_hash, display_name, created_at, locked_at) VALUES (?, ?, ?, ?, NULL, ?, NULL)',
    );
    const quota = db.prepare('INSERT INTO quota_accounts (account_id) VALUES (?)');
    const session = db.prepare(
      `INSERT INTO sessions (id, account_id, token_hash, cohort_hash, created_at, refreshed_at, last_used_at, access_floor, closed_at, method)
       VALUES (?, ?, ?, NULL, ?, ?, ?, 0, ?, 'password')`,
    );
    const upload = db.prepare(
      `INSERT INTO upload_sessions (id, uploader_id, payer_id, kind, declared_size, state, created_at, expires_at) VALUES (?, ?, ?, 'original', 1024, ?, ?, ?)`,
    );
    const directory = db.prepare(
      'INSERT INTO device_directories (account_id, identity_key, seq, body, accepted_at) VALUES (?, ?, 1, ?, ?)',
    );
    const device = db.prepare(
      'INSERT INTO directory_devices (account_id, device_id, position, ed25519, mldsa65, added_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
    const handle = db.prepare('INSERT INTO handles (account_id, user_name, published, claimed_at) VALUES (?, ?, 1, ?)');
    const key = Buffer.alloc(32, 7);
    db.transaction(() => {
      for (let i = 0; i < c.accounts; i++) {
        const id = seedId(TAG.account, i);
        account.run(id, `seed-${i}@example.org`, `seed-${i}@example.org`, passwordHash, now - 30 * DAY + i);
        quota.run(id);
        // Two devices each (the keys are placeholders: no seeded account signs anything), and a
        // published handle for one account in ten.
        directory.run(id, key, key, now - 30 * DAY);
        for (const [position, deviceId] of ['phone', 'laptop'].entries())
          device.run(id, deviceId, position, key, key, now - 30 * DAY);
        if (i % 10 === 0) handle.run(id, `seed${i}`, now - 30 * DAY);
      }
      for (let i = 0; i < c.sessions; i++) {
        const at = now - 10 * DAY + i;
        const tokenHash = createHash('sha256').update(`seed-session-${i}`).digest('hex');
        session.run(
          seedId(TAG.session, i),
          seedId(TAG.account, i % c.accounts),
          tokenHash,
          at,
          at,
          at,
          i % 3 === 0 ? at + 1 : null,
        );
      }
      for (let i = 0; i < c.uploads; i++) {
        const at = now - 2 * DAY + i;
        upload.run(seedId(TAG.upload, i), hot, hot, i % 2 === 0 ? 'Expired' : 'Cancelled', at, at + 3_600_000);
      }
      // The hot account's library: live originals, each charged to it, each with its sync entry.
      const asset = db.prepare(
        `INSERT INTO assets (id, owner_id, uploader_id, state, created_at) VALUES (?, ?, ?, 'live', ?)`,
      );
      const ref = db.prepare(
        `INSERT INTO asset_blobs (asset_id, kind, content_hash, size) VALUES (?, 'original', ?, ${BLOB_BYTES})`,
      );
      const blob = db.prepare(
        `INSERT INTO blobs (content_hash, size, charged_to, peer, stored_at) VALUES (?, ${BLOB_BYTES}, ?, NULL, ?)`,
      );
      const entry = db.prepare(
        'INSERT INTO sync_changes (account_id, kind, object_id, op, seq, at) VALUES (?, ?, ?, ?, ?, ?)',
      );
      for (let i = 0; i < c.assets; i++) {
        const id = seedId(TAG.asset, i);
        const hash = createHash('sha256').update(`seed-asset-${i}`).digest('hex');
        const at = now - 5 * DAY + i;
        asset.run(id, hot, hot, at);
        blob.run(hash, hot, at);
        ref.run(id, hash);
        entry.run(hot, 'asset', id, 'upsert', i + 1, at);
      }
      db.prepare('INSERT INTO quota_accounts (account_id) VALUES (?) ON CONFLICT DO NOTHING').run(hot);
      db.prepare('UPDATE quota_accounts SET charged = charged + ? WHERE account_id = ?').run(
        c.assets * BLOB_BYTES,
        hot,
      );
      const heads = db.prepare('INSERT INTO sync_heads (account_id, seq) VALUES (?, ?)');
      heads.run(hot, c.assets);
      // The other accounts' libraries: live originals spread over them, numbered per account.
      const others = c.otherAssets ?? 0;
      for (let i = 0; i < others; i++) {
        const owner = seedId(TAG.account, i % c.accounts);
        const id = seedId(TAG.other, i);
        const hash = createHash('sha256').update(`seed-other-${i}`).digest('hex');
        const at = now - 5 * DAY + i;
        asset.run(id, owner, owner, at);
        blob.run(hash, owner, at);
        ref.run(id, hash);
        entry.run(owner, 'asset', id, 'upsert', Math.floor(i / c.accounts) + 1, at);
      }
      if (others > 0)
        db.prepare(
          `UPDATE quota_accounts SET charged = charged + ${BLOB_BYTES} * (SELECT count(*) FROM assets WHERE owner_id = account_id) WHERE account_id LIKE ?`,
        ).run(`${seedId(TAG.account, 0).slice(0, -12)}%`);
      // The rest of the log: removals spread over the seeded accounts, numbered per account after their assets.
      const taken = c.accounts > 0 ? Math.ceil(others / c.accounts) : 0;
      for (let i = 0; i < c.syncEntries; i++) {
        const a = i % c.accounts;
        entry.run(
          seedId(TAG.account, a),
          'asset',
          seedId(TAG.gone, i),
          'remove',
          taken + Math.floor(i / c.accounts) + 1,
          now - DAY + i,
        );
      }
      // The seeded accounts' heads only: accounts the fresh phase made through the API have theirs.
      db.prepare(
        'INSERT INTO sync_heads (account_id, seq) SELECT account_id, max(seq) FROM sync_changes WHERE account_id LIKE ? GROUP BY account_id',
      ).run(`${seedId(TAG.account, 0).slice(0, -12)}%`);
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
    await db.query(
      `INSERT INTO quota_accounts (account_id) SELECT ${id(TAG.account)} FROM generate_series(0, $1::int - 1) g`,
      [c.accounts],
    );
    // Two devices each (placeholder keys: no seeded account signs anything), a published handle for one in ten.
    await db.query(
      `INSERT INTO device_directories (account_id, identity_key, seq, body, accepted_at)
       SELECT ${id(TAG.account)}, '\\x0707'::bytea, 1, '\\x0707'::bytea, $2::bigint FROM generate_series(0, $1::int - 1) g`,
      [c.accounts, Date.now() - 30 * DAY],
    );
    await db.query(
      `INSERT INTO directory_devices (account_id, device_id, position, ed25519, mldsa65, added_at)
       SELECT ${id(TAG.account)}, d.name, d.position, '\\x0707'::bytea, '\\x0707'::bytea, $2::bigint
       FROM generate_series(0, $1::int - 1) g, (VALUES ('phone', 0), ('laptop', 1)) AS d(name, position)`,
      [c.accounts, Date.now() - 30 * DAY],
    );
    await db.query(
      `INSERT INTO handles (account_id, user_name, published, claimed_at) SELECT ${id(TAG.account)}, 'seed' || g, true, $2::bigint
       FROM generate_series(0, $1::int - 1, 10) g`,
      [c.accounts, Date.now() - 30 * DAY],
    );
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
    // The hot account's library: live originals, each charged to it, each with its sync entry.
    const assetHash = `encode(sha256(convert_to('seed-asset-' || g, 'UTF8')), 'hex')`;
    await db.query(
      `INSERT INTO assets (id, owner_id, uploader_id, state, created_at) SELECT ${id(TAG.asset)}, $2, $2, 'live', $3::bigint - ${5 * DAY} + g FROM generate_series(0, $1::int - 1) g`,
      [c.assets, hot, Date.now()],
    );
    await db.query(
      `INSERT INTO blobs (content_hash, size, charged_to, stored_at) SELECT ${assetHash}, ${BLOB_BYTES}, $2, $3::bigint FROM generate_series(0, $1::int - 1) g`,
      [c.assets, hot, Date.now()],
    );
    await db.query(
      `INSERT INTO asset_blobs (asset_id, kind, content_hash, size) SELECT ${id(TAG.asset)}, 'original', ${assetHash}, ${BLOB_BYTES} FROM generate_series(0, $1::int - 1) g`,
      [c.assets],
    );
    await db.query(
      `INSERT INTO sync_changes (account_id, kind, object_id, op, seq, at) SELECT $2, 'asset', ${id(TAG.asset)}, 'upsert', g + 1, $3::bigint - ${5 * DAY} + g FROM generate_series(0, $1::int - 1) g`,
      [c.assets, hot, Date.now()],
    );
    await db.query('INSERT INTO quota_accounts (account_id) VALUES ($1) ON CONFLICT DO NOTHING', [hot]);
    await db.query('UPDATE quota_accounts SET charged = charged + $1 WHERE account_id = $2', [
      c.assets * BLOB_BYTES,
      hot,
    ]);
    await db.query('INSERT INTO sync_heads (account_id, seq) VALUES ($1, $2)', [hot, c.assets]);
    // The other accounts' libraries: live originals spread over them, numbered per account.
    const others = c.otherAssets ?? 0;
    if (others > 0) {
      const owner = `'00000000-0000-7000-${TAG.account}-' || lpad(to_hex(g % $2::int), 12, '0')`;
      const otherHash = `encode(sha256(convert_to('seed-other-' || g, 'UTF8')), 'hex')`;
      const series = 'FROM generate_series(0, $1::int - 1) g';
      await db.query(
        `INSERT INTO assets (id, owner_id, uploader_id, state, created_at) SELECT ${id(TAG.other)}, ${owner}, ${owner}, 'live', $3::bigint - ${5 * DAY} + g ${series}`,
        [others, c.accounts, Date.now()],
      );
      await db.query(
        `INSERT INTO blobs (content_hash, size, charged_to, stored_at) SELECT ${otherHash}, ${BLOB_BYTES}, ${owner}, $3::bigint ${series}`,
        [others, c.accounts, Date.now()],
      );
      await db.query(
        `INSERT INTO asset_blobs (asset_id, kind, content_hash, size) SELECT ${id(TAG.other)}, 'original', ${otherHash}, ${BLOB_BYTES} ${series}`,
        [others],
      );
      await db.query(
        `INSERT INTO sync_changes (account_id, kind, object_id, op, seq, at) SELECT ${owner}, 'asset', ${id(TAG.other)}, 'upsert', g / $2::int + 1, $3::bigint - ${5 * DAY} + g ${series}`,
        [others, c.accounts, Date.now()],
      );
      await db.query(
        `UPDATE quota_accounts q SET charged = charged + ${BLOB_BYTES} * n FROM (SELECT owner_id, count(*) AS n FROM assets WHERE owner_id LIKE $1 GROUP BY owner_id) a WHERE q.account_id = a.owner_id`,
        [`${seedId(TAG.account, 0).slice(0, -12)}%`],
      );
    }
    // The rest of the log: removals spread over the seeded accounts, numbered per account after their assets.
    await db.query(
      `INSERT INTO sync_changes (account_id, kind, object_id, op, seq, at)
       SELECT '00000000-0000-7000-${TAG.account}-' || lpad(to_hex(g % $2::int), 12, '0'), 'asset', ${id(TAG.gone)}, 'remove', $4::int + g / $2::int + 1, $3::bigint - ${DAY} + g
       FROM generate_series(0, $1::int - 1) g`,
      [c.syncEntries, c.accounts, Date.now(), c.accounts > 0 ? Math.ceil(others / c.accounts) : 0],
    );
    // The seeded accounts' heads only: accounts the fresh phase made through the API have theirs.
    await db.query(
      'INSERT INTO sync_heads (account_id, seq) SELECT account_id, max(seq) FROM sync_changes WHERE account_id LIKE $1 GROUP BY account_id',
      [`${seedId(TAG.account, 0).slice(0, -12)}%`],
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
    summary: `seeded ${n(counts.accounts)} accounts, ${n(counts.sessions)} sessions, ${n(counts.uploads)} upload sessions, ${n(counts.assets)} assets on the hot account${counts.otherAssets ? ` and ${n(counts.otherAssets)} across the others` : ''}, ${n(counts.syncEntries)} removals across the store in ${seconds.toFixed(1)} s`,
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

/** One statement a hot request ran, as the server's store ran it (bench/sql-trace.mjs). */
interface Traced {
  store: 'sqlite' | 'postgresql';
  sql: string;
  /** Positional values, or named ones (better-sqlite3's object form); bytes as `{ bytes: hex }`. */
  values: unknown[] | Record<string, unknown>;
}

/** A request of a hot path and the distinct statements it ran, in order. */
export interface TracedRequest {
  name: string;
  statements: Traced[];
}

/** The trace preload, for NODE_OPTIONS (`--import` loads it before tsx, so it is plain JavaScript). */
export const SQL_TRACE_PRELOAD = fileURLToPath(new URL('./sql-trace.mjs', import.meta.url));

/** Transaction control and the like: nothing to plan. */
const isPlannable = (sql: string) => /^\s*(WITH|SELECT|INSERT|UPDATE|DELETE)\b/i.test(sql);

/**
 * Each hot request once, as the scenarios send it, against a server started with the trace
 * preload: sign-in, the authenticated GET, refresh, and an upload opening, all on the hot account
 * (whose rows the seeding grew). Returns each request's distinct plannable statements, read from
 * the trace file between the markers this writes before and after the request.
 */
export async function traceHotRequests(url: string, traceFile: string, hotAddress: string): Promise<TracedRequest[]> {
  const requests: {
    name: string;
    send: (s: { access: string; session: string; recent: string }) => Promise<{ status: number }>;
  }[] = [
    { name: 'sign-in', send: () => api(url, 'POST', '/v1/auth/login', { address: hotAddress, password: PASSWORD }) },
    {
      name: 'authenticated GET /v1/auth/profile',
      send: (t) => api(url, 'GET', '/v1/auth/profile', undefined, t.access),
    },
    { name: 'POST /v1/auth/refresh', send: (t) => api(url, 'POST', '/v1/auth/refresh', { session_token: t.session }) },
    { name: 'POST /upload (opening)', send: (t) => api(url, 'POST', '/upload', JSON.parse(UPLOAD_BODY), t.access) },
    // The first page of the hot account's library (a new device's first sync).
    { name: 'GET /v1/sync (a page of 500)', send: (t) => api(url, 'GET', '/v1/sync?limit=500', undefined, t.access) },
    // A device 500 changes behind: the hot account's last page, from the cursor before it.
    {
      name: 'GET /v1/sync from a recent cursor (a page of 500)',
      send: (t) => api(url, 'GET', `/v1/sync?limit=500&cursor=${encodeURIComponent(t.recent)}`, undefined, t.access),
    },
  ];
  const signIn = await api(url, 'POST', '/v1/auth/login', { address: hotAddress, password: PASSWORD });
  if (signIn.status !== 200) throw new Error(`hot account sign-in: ${signIn.status} ${JSON.stringify(signIn.body)}`);
  const access = signIn.body.access_token as string;
  // The cursor the hot account's last page starts from, walked to before anything is traced.
  let recent = '';
  for (let cursor = ''; ; ) {
    const r = await api(url, 'GET', `/v1/sync?limit=500${cursor}`, undefined, access);
    if (r.status !== 200) throw new Error(`sync: ${r.status}`);
    if (!r.body.has_more) break;
    recent = r.body.cursor as string;
    cursor = `&cursor=${encodeURIComponent(recent)}`;
  }
  const tokens = { access, session: signIn.body.session_token as string, recent };
  const traced: TracedRequest[] = [];
  for (const r of requests) {
    const before = readFileSync(traceFile, 'utf8').length;
    const reply = await r.send(tokens);
    if (reply.status >= 300) throw new Error(`${r.name}: ${reply.status}`);
    // A write's batch answers once it is durable, after its statements ran.
    const lines = readFileSync(traceFile, 'utf8').slice(before).split('\n').filter(Boolean);
    const seen = new Set<string>();
    const statements: Traced[] = [];
    for (const line of lines) {
      const t = JSON.parse(line) as Traced;
      if (!isPlannable(t.sql) || seen.has(t.sql)) continue;
      seen.add(t.sql);
      statements.push(t);
    }
    if (statements.length === 0)
      throw new Error(`${r.name}: the trace holds no statement (was the server started with ${SQL_TRACE_PRELOAD}?)`);
    traced.push({ name: r.name, statements });
  }
  return traced;
}

/** A traced value as better-sqlite3 takes it. */
const sqliteValue = (v: unknown): unknown =>
  v !== null && typeof v === 'object' && 'bytes' in v ? Buffer.from((v as { bytes: string }).bytes, 'hex') : v;

/** A traced value as an SQL literal of unknown type, which PostgreSQL casts to the parameter's type. */
function pgLiteral(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'object' && 'bytes' in (v as object)) return `'\\x${(v as { bytes: string }).bytes}'`;
  const quote = (x: string) => `'${x.replace(/'/g, "''")}'`;
  if (Array.isArray(v))
    return quote(`{${v.map((x) => (x === null ? 'NULL' : `"${String(x).replace(/(["\\])/g, '\\$1')}"`)).join(',')}}`);
  return quote(String(v));
}

/** A plan line that reads a whole table (SQLite: SCAN without an index; PostgreSQL: Seq Scan). */
const sqliteScan = (line: string) =>
  /\bSCAN \w+/.test(line) && !/USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY|CONSTANT ROW/.test(line);
const pgScan = (line: string) => /Seq Scan on/.test(line);
/** SQLite's plan lines that scan a whole table: a scan of a subquery's rows (its CO-ROUTINE) reads no table. */
const sqliteScans = (plan: readonly string[]) => {
  const coroutines = new Set(plan.flatMap((l) => /^CO-ROUTINE (\w+)/.exec(l)?.[1] ?? []));
  return plan.some((l) => sqliteScan(l) && !coroutines.has(/\bSCAN (\w+)/.exec(l)?.[1] ?? ''));
};

/**
 * Plans of the statements each hot request ran (traceHotRequests), on the seeded store, with the
 * values they ran with. SQLite: EXPLAIN QUERY PLAN, plus the statement run once in a rolled-back
 * transaction, timed. PostgreSQL: EXPLAIN (ANALYZE, BUFFERS) in a rolled-back transaction, so
 * writes are measured without keeping them.
 */
export async function explainHotPaths(target: Target, requests: TracedRequest[]): Promise<Plan[]> {
  const all = requests.flatMap((r) => r.statements.map((s, i) => ({ ...s, name: `${r.name} #${i + 1}` })));
  if (target.pgUrl) {
    return withPg(target.pgUrl, async (db) => {
      const plans: Plan[] = [];
      for (const s of all) {
        const values = Array.isArray(s.values) ? s.values : [];
        // Prepared and run the way the server's pool runs them: with the one plan made without the
        // values and the server's cost settings (adapters-pg open.ts, CONNECTION_SETTINGS), so a plan
        // that only a value makes good shows.
        await db.query(`PREPARE hot_path AS ${s.sql}`);
        await db.query('BEGIN');
        try {
          for (const setting of CONNECTION_SETTINGS) await db.query(setting.replace(/^SET /, 'SET LOCAL '));
          const execute =
            values.length > 0 ? `EXECUTE hot_path(${values.map(pgLiteral).join(', ')})` : 'EXECUTE hot_path';
          // A write whose row the traced request already made (an insert of that key) cannot run
          // again: its plan is then shown without being run.
          await db.query('SAVEPOINT analyzed');
          let plan: string[];
          try {
            plan = (await db.query(`EXPLAIN (ANALYZE, BUFFERS) ${execute}`)).rows.map(
              (row: Record<string, string>) => row['QUERY PLAN']!,
            );
          } catch (error) {
            await db.query('ROLLBACK TO SAVEPOINT analyzed');
            plan = (await db.query(`EXPLAIN ${execute}`)).rows.map((row: Record<string, string>) => row['QUERY PLAN']!);
            plan.push(`(not run again: ${(error as Error).message})`);
          }
          const ms = Number(/Execution Time: ([\d.]+) ms/.exec(plan.join('\n'))?.[1] ?? 0);
          const removed = plan.reduce(
            (n, l) => n + Number(/Rows Removed by (?:Filter|Index Recheck): (\d+)/.exec(l)?.[1] ?? 0),
            0,
          );
          plans.push({ store: 'postgresql', name: s.name, sql: s.sql, plan, fullScan: plan.some(pgScan), ms, removed });
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
    return all.map((s) => {
      const args = Array.isArray(s.values)
        ? s.values.map(sqliteValue)
        : [Object.fromEntries(Object.entries(s.values).map(([k, v]) => [k, sqliteValue(v)]))];
      const rows = db.prepare(`EXPLAIN QUERY PLAN ${s.sql}`).all(...args) as { detail: string }[];
      const plan = rows.map((r) => r.detail);
      const stmt = db.prepare(s.sql);
      db.exec('BEGIN IMMEDIATE');
      const started = performance.now();
      let ms = 0;
      let ran = true;
      try {
        if (stmt.reader) stmt.all(...args);
        else stmt.run(...args);
      } catch (error) {
        // A write whose row the traced request already made (an insert of that key): planned, not run.
        ran = false;
        plan.push(`(not run again: ${(error as Error).message})`);
      } finally {
        ms = ran ? performance.now() - started : 0;
        db.exec('ROLLBACK');
        if (ran) plan.push(`(ran once in a rolled-back transaction: ${ms.toFixed(3)} ms)`);
      }
      return { store: 'sqlite', name: s.name, sql: s.sql, plan, fullScan: sqliteScans(plan), ms, removed: 0 };
    });
  } finally {
    db.close();
  }
}
