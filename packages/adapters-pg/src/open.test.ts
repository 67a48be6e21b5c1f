import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { openPgDatabase, type OpenPgDatabase } from './open.js';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from './testing.js';

/** The pool's connection setup (a server of its own: PGlite is not reached through openPgDatabase). */
const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('open.test.ts: SKIPPED: PG_URL is not set; openPgDatabase needs a PostgreSQL server.');

describe.skipIf(!PG_URL)('openPgDatabase (PG_URL)', () => {
  let scratch: ScratchDatabase;
  let opened: OpenPgDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'open');
    opened = await openPgDatabase(scratch.url, { maxConnections: 3 });
    pool = (opened.db as unknown as { $client: pg.Pool }).$client;
  });
  afterAll(async () => {
    await opened?.close();
    await scratch?.drop();
  });

  it('plans prepared statements once per connection: a one-element batch is not planned again on each call', async () => {
    const clients = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
    try {
      for (const client of clients) {
        expect((await client.query('SHOW plan_cache_mode')).rows[0].plan_cache_mode).toBe('force_generic_plan');
      }
      const client = clients[0]!;
      // The shape of the batched session read, always sent one id (as one session's requests do).
      const text = 'SELECT s.id FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.id = ANY($1::text[])';
      for (let i = 0; i < 12; i++) await client.query({ name: 'open_test_batch', text, values: [[`id-${i}`]] });
      const [stats] = (
        await client.query(
          "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'open_test_batch'",
        )
      ).rows;
      expect(Number(stats.custom_plans)).toBe(0);
      expect(Number(stats.generic_plans)).toBe(12);
    } finally {
      for (const c of clients) c.release();
    }
  });
});
