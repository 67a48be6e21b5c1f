import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { CoreError } from '@strongroom/core';
import { PgSchemaStatus, pgFault } from './schema-status.js';
import { pgUrlFromEnv } from './testing.js';

/** A failed schema read says why, so /readyz tells refused credentials from a database that is down. */
const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('schema-status.test.ts: the PostgreSQL cases SKIPPED: PG_URL is not set.');

const pools: pg.Pool[] = [];
afterAll(async () => {
  for (const p of pools) await p.end();
});

async function faultReading(url: string): Promise<unknown> {
  const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 5_000, max: 1 });
  pool.on('error', () => {});
  pools.push(pool);
  const e = await new PgSchemaStatus(drizzle(pool)).readSchemaStamps().then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(CoreError);
  return (e as CoreError).fault;
}

describe('the PostgreSQL schema read, failing', () => {
  it('reads SQLSTATE class 28 as refused credentials, another SQLSTATE as an error, none as no answer, through wrappers', () => {
    expect(pgFault(Object.assign(new Error('password authentication failed'), { code: '28P01' }))).toBe('credentials');
    expect(
      pgFault(
        new Error('Failed query', { cause: Object.assign(new Error('role "x" does not exist'), { code: '28000' }) }),
      ),
    ).toBe('credentials');
    expect(pgFault(Object.assign(new Error('relation does not exist'), { code: '42P01' }))).toBe('failed');
    expect(pgFault(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe('unreachable');
    expect(pgFault(new Error('timeout exceeded when trying to connect'))).toBe('unreachable');
  });

  it.skipIf(!PG_URL)('a role the server turns away is refused credentials', async () => {
    const url = new URL(PG_URL!);
    url.username = 'strongroom_no_such_role';
    expect(await faultReading(url.href)).toBe('credentials');
  });

  it.skipIf(!PG_URL)('a port nothing listens on is no answer', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const { port } = closed.address() as { port: number };
    await new Promise<void>((r) => closed.close(() => r()));
    const url = new URL(PG_URL!);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    expect(await faultReading(url.href)).toBe('unreachable');
  });
});
