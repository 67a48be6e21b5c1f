import fc from 'fast-check';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { peerBucketModelProperty } from '@strongroom/core/testing/models';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { PgDiscoveryStore } from './discovery-store.js';
import { openTestDatabase, pgUrlFromEnv, type TestDatabase } from './testing.js';

// On PG_URL each store gets its own connection pool to one scratch database, as two processes
// would; on PGlite (in-process, one connection) the two stores share it.
let t: TestDatabase;
let secondPool: pg.Pool | null = null;
beforeAll(async () => {
  t = await openTestDatabase();
}, 60_000);
afterAll(async () => {
  await secondPool?.end();
  await t?.close();
});

describe(`per-peer bucket, model-based, on PostgreSQL`, () => {
  it('two store instances over one database draw from one bucket and never over-admit', async () => {
    let second: PgDiscoveryStore = new PgDiscoveryStore(t.db);
    if (pgUrlFromEnv() && t.kind === 'postgres') {
      const url = await currentDatabaseUrl(t);
      secondPool = new pg.Pool({ connectionString: url, max: 4 });
      secondPool.on('error', () => undefined);
      second = new PgDiscoveryStore(drizzle({ client: secondPool }));
    }
    const seed = Date.now();
    try {
      await fc.assert(
        peerBucketModelProperty(async () => [new PgDiscoveryStore(t.db), second] as const),
        { numRuns: 25, seed },
      );
    } catch (err) {
      console.error(`peer bucket model on ${t.kind} failed with seed ${seed}`);
      throw err;
    }
  }, 120_000);
});

/** The scratch database's URL: PG_URL with the current database's name. */
async function currentDatabaseUrl(db: TestDatabase): Promise<string> {
  const result = (await db.db.execute('select current_database() as name')) as unknown as { rows: { name: string }[] };
  const url = new URL(pgUrlFromEnv()!);
  url.pathname = `/${result.rows[0]!.name}`;
  return url.toString();
}
