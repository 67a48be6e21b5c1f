import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describePortContracts } from '@strongroom/port-contracts';
import { rowsOf } from './db.js';
import { openPgDatabase, type OpenPgDatabase } from './open.js';
import { createPgPorts } from './ports.js';
import { PgStore } from './store.js';
import {
  createScratchDatabase,
  emptyTables,
  pgbouncerBinary,
  pgUrlFromEnv,
  startPgBouncer,
  type RunningPgBouncer,
  type ScratchDatabase,
} from './testing.js';

/**
 * The store behind a real PgBouncer in transaction mode (`pooler: 'transaction'`): consecutive
 * transactions of one client connection land on different server connections, so anything resting
 * on session state (a named statement, a session SET, a session advisory lock) breaks here.
 */
const PG_URL = pgUrlFromEnv();
const BOUNCER = pgbouncerBinary();
const reason = !PG_URL
  ? 'PG_URL is not set'
  : !BOUNCER
    ? 'pgbouncer is not installed (apt-get install pgbouncer)'
    : null;
if (reason) console.warn(`pooler.test.ts: SKIPPED: ${reason}.`);

let scratch: ScratchDatabase;
let bouncer: RunningPgBouncer;
let opened: OpenPgDatabase;
beforeAll(async () => {
  if (reason) return;
  scratch = await createScratchDatabase(PG_URL!, 'pooler');
  // Two server connections for a pool of eight: every client connection shares them.
  bouncer = await startPgBouncer(PG_URL!, 2);
  opened = await openPgDatabase(bouncer.through(scratch.url), { pooler: 'transaction', maxConnections: 8 });
}, 60_000);
afterAll(async () => {
  await opened?.close();
  await bouncer?.stop();
  await scratch?.drop();
});

describe.skipIf(reason !== null)('PostgreSQL behind PgBouncer in transaction mode', () => {
  it('migrates from several processes starting together: the migration lock is a transaction one', async () => {
    const fresh = await createScratchDatabase(PG_URL!, 'pooler_mig');
    try {
      const url = bouncer.through(fresh.url);
      const all = await Promise.all(
        [1, 2, 3].map(() => openPgDatabase(url, { pooler: 'transaction', maxConnections: 1 })),
      );
      const [row] = await rowsOf<{ n: string }>(
        all[0]!.db,
        sql`SELECT count(*) AS n FROM drizzle.__drizzle_migrations`,
      );
      expect(Number(row!.n)).toBeGreaterThan(0);
      await Promise.all(all.map((o) => o.close()));
      // No session lock was left behind on a server connection: a direct session takes it at once.
      const direct = new pg.Client({ connectionString: fresh.url });
      await direct.connect();
      try {
        // Only this database's: other suites running at the same time hold their own transaction locks.
        const [held] = (
          await direct.query(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
          )
        ).rows;
        expect(Number(held.n)).toBe(0);
      } finally {
        await direct.end();
      }
    } finally {
      await fresh.drop();
    }
  });

  it('every transaction carries the index costs, whichever server connection runs it', async () => {
    const seen = await Promise.all(
      Array.from({ length: 12 }, () =>
        opened.db.transaction(
          async (tx) =>
            (await rowsOf<{ random_page_cost: string }>(tx, sql`SHOW random_page_cost`))[0]!.random_page_cost,
        ),
      ),
    );
    expect(new Set(seen)).toEqual(new Set(['1.1']));
  });

  it('sends no named statement: PgBouncer would hand the next execution a connection that never saw it', async () => {
    const store = new PgStore(opened.db);
    // The hot reads run as named statements without a pooler; here many run at once over two server connections.
    const reads = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 2 ? store.findSessionById(`no-such-${i}`) : store.findSessionAccess(`no-such-${i}`),
      ),
    );
    expect(reads).toEqual(Array.from({ length: 40 }, () => null));
    const [prepared] = await rowsOf<{ n: string }>(
      opened.db,
      sql`SELECT count(*) AS n FROM pg_prepared_statements WHERE name <> ''`,
    );
    expect(Number(prepared!.n)).toBe(0);
  });
});

if (reason === null) {
  describePortContracts('pg behind pgbouncer', async () => {
    await emptyTables(opened.db);
    return { ports: createPgPorts(opened.db), connect: async () => createPgPorts(opened.db) };
  });
}
