import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzleLite } from 'drizzle-orm/pglite';
import type { PGlite } from '@electric-sql/pglite';
import type pg from 'pg';
import { rowsOf, type PgDb } from './db.js';
import { CONNECTION_SETTINGS } from './open.js';
import { PgDeviceStore } from './devices-store.js';
import { PgStore } from './store.js';
import { LOCK_AND_READ, WRITE_OPENINGS } from './quota-store.js';
import { SYNC_PAGE } from './sync-store.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

/**
 * The hot reads of every authenticated request and every upload, planned the way the server's
 * pool plans them (one plan per statement, made without the values, under CONNECTION_SETTINGS), on
 * a library of 1,000 accounts: each key is looked up through its index. A plan that reads a whole
 * table costs a full scan per batch, at any size the planner still thinks small.
 *
 * Without `random_page_cost = 1.1` both plans read their table whole on a PostgreSQL server
 * (PG_URL, as CI runs it); PGlite's planner happens to pick the indexes either way.
 */
const ACCOUNTS = 1000;
let t: TestDatabase;

beforeAll(async () => {
  t = await openTestDatabase();
  const ids = sql`SELECT '0190f0f0-0000-7000-8000-' || lpad(to_hex(i), 12, '0') AS id, i FROM generate_series(1, ${ACCOUNTS}) AS i`;
  await t.db.execute(
    sql`INSERT INTO accounts (id, address, address_key, created_at) SELECT id, 'a' || i || '@example.org', 'a' || i || '@example.org', 0 FROM (${ids}) AS k`,
  );
  await t.db.execute(sql`INSERT INTO sessions (id, account_id, token_hash, created_at, refreshed_at, last_used_at, access_floor)
    SELECT 's' || id, id, 'h' || id, 0, 0, 0, 0 FROM (${ids}) AS k`);
  await t.db.execute(
    sql`INSERT INTO device_directories (account_id, identity_key, seq, body, accepted_at) SELECT id, '\\x00', 1, '\\x00', 0 FROM (${ids}) AS k`,
  );
  await t.db.execute(sql`INSERT INTO directory_devices (account_id, device_id, position, ed25519, mldsa65, added_at)
    SELECT id, 'phone', 0, '\\x00', '\\x00', 0 FROM (${ids}) AS k`);
  // Every account's ledger row is written with it (createLedgerRows).
  await t.db.execute(sql`INSERT INTO quota_accounts (account_id) SELECT id FROM (${ids}) AS k`);
  // Only these tables: the quota tables stay as a new deployment has them, never analyzed.
  await t.db.execute(sql`ANALYZE accounts, sessions, device_directories, directory_devices`);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** The statements a store call sends, as drizzle hands them to the driver. */
async function statementsOf(call: (db: PgDb) => Promise<unknown>): Promise<{ query: string; params: unknown[] }[]> {
  const seen: { query: string; params: unknown[] }[] = [];
  const logger = { logQuery: (query: string, params: unknown[]) => void seen.push({ query, params }) };
  const client = (t.db as unknown as { $client: unknown }).$client;
  const db =
    t.kind === 'pglite'
      ? drizzleLite({ client: client as PGlite, logger })
      : drizzlePg({ client: client as pg.Pool, logger });
  await call(db as unknown as PgDb);
  return seen;
}

/** The plan of `query` with `params`, prepared and run under the pool's settings, on one connection. */
async function planOf(query: string, params: unknown[]): Promise<string> {
  return t.db.transaction(async (tx) => {
    for (const setting of CONNECTION_SETTINGS) await tx.execute(sql.raw(setting.replace(/^SET /, 'SET LOCAL ')));
    await tx.execute(sql.raw(`PREPARE hot_read AS ${query}`));
    try {
      // Untyped literals: each takes the type the statement gives its parameter.
      const quoted = (s: string) => `'${s.replace(/'/g, "''")}'`;
      const element = (e: unknown) => (e === null ? 'NULL' : `"${String(e).replace(/["\\]/g, '\\$&')}"`);
      const literal = (v: unknown) =>
        typeof v === 'number'
          ? String(v)
          : typeof v === 'string'
            ? quoted(v)
            : quoted(`{${(v as unknown[]).map(element).join(',')}}`);
      const plan = await rowsOf<{ 'QUERY PLAN': string }>(
        tx,
        sql.raw(`EXPLAIN EXECUTE hot_read(${params.map(literal).join(', ')})`),
      );
      return plan.map((r) => r['QUERY PLAN']).join('\n');
    } finally {
      await tx.execute(sql.raw('DEALLOCATE hot_read'));
    }
  });
}

const account = (i: number) => `0190f0f0-0000-7000-8000-${i.toString(16).padStart(12, '0')}`;

describe('the hot reads use their indexes on 1,000 accounts', () => {
  it('the batched session read: sessions and accounts by key, neither read whole', async () => {
    const [read] = await statementsOf((db) =>
      Promise.all([1, 2, 3].map((i) => new PgStore(db).findSessionAccess(`s${account(i)}`))),
    );
    expect(read?.query).toContain('ANY(');
    const plan = await planOf(read!.query, read!.params);
    expect(plan).not.toMatch(/Seq Scan on (sessions|accounts)\b/);
    expect(plan).toMatch(/accounts_pkey/);
  });

  it("the batched device lookup: the directory's key, the table not read whole", async () => {
    const [read] = await statementsOf((db) =>
      Promise.all([1, 2, 3].map((i) => new PgDeviceStore(db).findDeviceAddedAt(account(i), 'phone'))),
    );
    expect(read?.query).toContain('unnest(');
    const plan = await planOf(read!.query, read!.params);
    expect(plan).not.toMatch(/Seq Scan on directory_devices\b/);
    expect(plan).toMatch(/directory_devices_account_id_device_id_pk/);
  });
});

describe('the opening lock, planned before the first upload', () => {
  // A connection plans the statement once, on its first opening: on a new deployment, or a new
  // scratch database, upload_sessions is empty then, and the plan stays while the table grows.
  it('expires lapsed sessions through the open-session index by payer, not by walking every open session', async () => {
    const { text, values } = LOCK_AND_READ.with({ ids: [account(1), account(2), account(3)], latest: 1 });
    const plan = await planOf(text, values);
    expect(plan).not.toMatch(/Seq Scan on upload_sessions\b/);
    // The payer bounds the index scan: its entries only, not every open session of the library.
    const lines = plan.split('\n');
    const scan = lines.findIndex((line) => /Scan (using|on) upload_sessions_open_payer_idx/.test(line));
    expect(scan).toBeGreaterThanOrEqual(0);
    expect(lines[scan + 1]).toMatch(/Index Cond: \(\(?payer_id = /);
  });

  it("the group's write moves its payers' ledger rows by key, not by reading every account's", async () => {
    const { text, values } = WRITE_OPENINGS.with({
      sessions: '[]',
      moved: [account(1), account(2)],
      delta: [10, 20],
      openDelta: [1, 1],
      hardSince: [null, null],
    });
    const plan = await planOf(text, values);
    expect(plan).not.toMatch(/Seq Scan on quota_accounts\b/);
    expect(plan).toMatch(/quota_accounts_pkey/);
  });

  it("locks the uploaders' and their sponsors' ledger rows by key, not by reading every account's", async () => {
    const { text, values } = LOCK_AND_READ.with({ ids: [account(1), account(2), account(3)], latest: 1 });
    const plan = await planOf(text, values);
    expect(plan).not.toMatch(/Seq Scan on quota_accounts\b/);
    expect(plan).toMatch(/quota_accounts_pkey/);
  });
});

describe('the sync page read is one index range scan', () => {
  it('a page: a range of the page index under its limit, each object by key, never a table read whole', async () => {
    const ids = sql`SELECT '0190f0f0-0000-7000-8000-' || lpad(to_hex(i), 12, '0') AS id FROM generate_series(1, ${ACCOUNTS}) AS i`;
    await t.db.execute(sql`INSERT INTO sync_changes (account_id, kind, object_id, op, seq, at)
      SELECT k.id, 'asset', k.id || '-' || n, 'upsert', n, 0 FROM (${ids}) AS k, generate_series(1, 20) AS n`);
    await t.db.execute(sql`ANALYZE sync_changes`);
    const { text, values } = SYNC_PAGE.with({ account: account(7), after: 5, limit: 501 });
    const plan = await planOf(text, values);
    // The limit stops the range of the page index; each entry's asset, album and blobs are read by key.
    expect(plan).toMatch(/Limit\b[^\n]*\n\s*->\s+Index (Only )?Scan using sync_changes_page_idx on sync_changes/);
    expect(plan).toMatch(/Index Scan using assets_pkey on assets/);
    expect(plan).toMatch(/Index Scan using upload_sessions_pkey on upload_sessions/);
    expect(plan).toMatch(/Index Scan using asset_blobs_asset_idx on asset_blobs/);
    expect(plan).not.toMatch(/Seq Scan|Hash/);
  });
});
