import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADDRESS_FREE_WRONG } from '@strongroom/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { startServerProcess, type ServerProcess } from '../harness/spawn.js';
import { fetchCall, PASSWORD, type Reply } from '../harness/http.js';

/**
 * Password guessing across processes: wrong passwords for one address sent together to two server
 * processes over one PostgreSQL database never get more than ten checked, the address is then held
 * on both, and the owner's sign-in ticket still signs in on either.
 */

const PG_URL = pgUrlFromEnv();
if (!PG_URL)
  console.warn(
    'password-guessing-multiprocess.test.ts: SKIPPED: PG_URL is not set (two processes need a PostgreSQL server).',
  );

describe.skipIf(!PG_URL)('password guessing over two processes on PostgreSQL', { timeout: 120_000 }, () => {
  let db: ScratchDatabase;
  let dataDir: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    db = await createScratchDatabase(PG_URL!, 'pwguess');
    dataDir = mkdtempSync(join(tmpdir(), 'sr-pwguess-'));
    servers.push(await startServerProcess({ dataDir, env: { SVC_DATABASE_URL: db.url } }));
    servers.push(await startServerProcess({ dataDir, env: { SVC_DATABASE_URL: db.url } }));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await db?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const throttled = (r: Reply) =>
    r.status === 429 && r.body?.code === 'error.auth.throttled' && Number(r.headers.get('retry-after')) > 0;

  it('30 wrong passwords at once over both processes: at most ten checked, then held on both; the ticket still signs in', async () => {
    const [a, b] = servers.map((s) => s.url) as [string, string];
    const address = `pwguess-${Date.now().toString(36)}@example.org`;
    const reg = await fetchCall(a, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
    expect(reg.status).toBe(200);
    const ticket = reg.body.sign_in_ticket as string;
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        fetchCall(i % 2 ? a : b, 'POST', '/v1/auth/login', { body: { address, password: `wrong guess number ${i}` } }),
      ),
    );
    const checked = replies.filter((r) => r.status === 401);
    // Every one is wrong, so none gives its place back: exactly the bound is checked.
    expect(checked).toHaveLength(ADDRESS_FREE_WRONG);
    for (const r of replies) expect(r.status === 401 || throttled(r)).toBe(true);
    for (const url of [a, b])
      expect(throttled(await fetchCall(url, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } }))).toBe(
        true,
      );
    const owner = await fetchCall(b, 'POST', '/v1/auth/login', {
      body: { address, password: PASSWORD, sign_in_ticket: ticket },
    });
    expect(owner.status).toBe(200);
  });
});
