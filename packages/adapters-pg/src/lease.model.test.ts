import fc from 'fast-check';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { leaseModelProperty } from '@strongroom/core/testing/models';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { PgDeploymentStore } from './second-factor-store.js';
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

describe('job leases, model-based, on PostgreSQL', () => {
  it('two store instances over one database never both hold a lease', async () => {
    let second = new PgDeploymentStore(t.db);
    if (pgUrlFromEnv() && t.kind === 'postgres') {
      const result = (await t.db.execute('select current_database() as name')) as unknown as {
        rows: { name: string }[];
      };
      const url = new URL(pgUrlFromEnv()!);
      url.pathname = `/${result.rows[0]!.name}`;
      secondPool = new pg.Pool({ connectionString: url.toString(), max: 4 });
      secondPool.on('error', () => undefined);
      second = new PgDeploymentStore(drizzle({ client: secondPool }));
    }
    const seed = Date.now();
    try {
      await fc.assert(
        leaseModelProperty(async () => [new PgDeploymentStore(t.db), second] as const),
        { numRuns: 25, seed },
      );
    } catch (err) {
      console.error(`lease model on ${t.kind} failed with seed ${seed}`);
      throw err;
    }
  }, 120_000);
});
