import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, pgUrlFromEnv, TcpProxy, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { startServerProcess, type ServerProcess } from '../harness/spawn.js';

/**
 * A network partition between the server and PostgreSQL: the connections stay open but nothing
 * passes (a proxy that stops forwarding). The real server process, with its real socket timeouts,
 * must answer a caught request with its problem (401/503 error.auth.unavailable) before any socket
 * timeout closes the connection under it. Short timeouts keep it to seconds: the database gives up
 * after 1 s (plus at most 1 s waiting for a connection), the socket idles out after 4 s.
 */

const PG_URL = pgUrlFromEnv();
if (!PG_URL)
  console.warn(
    'pg-partition.test.ts: SKIPPED: PG_URL is not set. A partition needs a PostgreSQL server behind a proxy.',
  );

const PASSWORD = 'correct horse battery staple';

describe.skipIf(!PG_URL)('a database partition under the real server (PG_URL)', { timeout: 60_000 }, () => {
  let scratch: ScratchDatabase;
  let proxy: TcpProxy;
  let server: ServerProcess;
  let dataDir: string;

  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'partition');
    const target = new URL(scratch.url);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    dataDir = mkdtempSync(join(tmpdir(), 'sr-partition-'));
    server = await startServerProcess({
      dataDir,
      env: {
        SVC_DATABASE_URL: proxy.urlFor(scratch.url),
        SVC_IDLE_TIMEOUT_S: '4',
        SVC_DB_STATEMENT_TIMEOUT_S: '1',
        SVC_DB_CONNECT_TIMEOUT_S: '1',
      },
    });
  }, 60_000);
  afterAll(async () => {
    await server?.stop(5_000);
    await proxy?.down();
    // DROP DATABASE can take a while on a shared, busy PostgreSQL.
    await scratch?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  const send = async (method: string, path: string, init: { token?: string; body?: unknown } = {}) => {
    const res = await fetch(server.url + path, {
      method,
      headers: {
        'x-svc-protocol': '2026-11-01',
        ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
        ...(init.body ? { 'content-type': 'application/json' } : {}),
      },
      body: init.body ? JSON.stringify(init.body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('a request caught in the partition receives its problem, not a closed socket; after it heals, all works', async () => {
    const reg = await send('POST', '/v1/auth/register', {
      body: { address: 'partition@example.org', password: PASSWORD },
    });
    expect(reg.status).toBe(200);
    const { access_token: token, session_token: sessionToken } = reg.body as {
      access_token: string;
      session_token: string;
    };
    expect((await send('GET', '/v1/auth/profile', { token })).status).toBe(200);
    proxy.stall();
    try {
      const started = Date.now();
      const [profile, refresh] = await Promise.all([
        send('GET', '/v1/auth/profile', { token }),
        send('POST', '/v1/auth/refresh', { body: { session_token: sessionToken } }),
      ]);
      expect(profile).toMatchObject({ status: 401, body: { code: 'error.auth.unavailable' } });
      expect(refresh).toMatchObject({ status: 503, body: { code: 'error.auth.unavailable' } });
      expect(Date.now() - started).toBeLessThan(4_000);
    } finally {
      await proxy.up();
    }
    // The stalled connections were dropped with their timed-out statements; the pool heals by itself.
    let healed = 0;
    for (let i = 0; i < 20 && healed !== 200; i++) {
      healed = (await send('GET', '/v1/auth/profile', { token })).status;
      if (healed !== 200) await new Promise((r) => setTimeout(r, 250));
    }
    expect(healed).toBe(200);
  });
});

describe('a configuration whose database waits outlast a socket timeout', { timeout: 60_000 }, () => {
  it('is refused at start, naming the variables (before any connection is tried)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sr-partition-conf-'));
    try {
      const start = startServerProcess({
        dataDir,
        env: {
          SVC_DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
          SVC_IDLE_TIMEOUT_S: '30',
          SVC_DB_STATEMENT_TIMEOUT_S: '30',
        },
      });
      await expect(start).rejects.toThrow(
        /exited \(1\).*configuration error: SVC_DB_CONNECT_TIMEOUT_S \+ SVC_DB_STATEMENT_TIMEOUT_S \(5 \+ 30 s\) must be shorter than SVC_IDLE_TIMEOUT_S \(30 s\)/s,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
