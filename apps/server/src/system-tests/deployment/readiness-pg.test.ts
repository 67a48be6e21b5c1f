import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLogger } from '@strongroom/core/testing';
import { createScratchDatabase, pgUrlFromEnv, TcpProxy, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { createApp } from '../../app.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores, type Stores } from '../../deps.js';
import { call } from '@strongroom/tests';

/**
 * Readiness against a real PostgreSQL that goes away: the connection runs through a TCP proxy the
 * test takes down (every connection reset, new ones refused) and brings back on the same port.
 */
const PG_URL = pgUrlFromEnv();
if (!PG_URL) console.warn('readiness-pg.test.ts: SKIPPED: PG_URL is not set (testServer covers readiness on SQLite).');

describe.skipIf(!PG_URL)('readiness on PostgreSQL (PG_URL)', { timeout: 60_000 }, () => {
  let scratch: ScratchDatabase;
  let proxy: TcpProxy;
  let stores: Stores;
  let app: Hono;

  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'readyz');
    const target = new URL(scratch.url);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    const config = readConfig({
      SVC_DATABASE_URL: proxy.urlFor(scratch.url),
      SVC_BASE_URL: 'http://127.0.0.1:8080',
      SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
    });
    stores = await openStores(config);
    app = createApp(await buildDeps(config, stores, { ...nodePlatform(), logger: new MemoryLogger() }));
  }, 60_000);
  afterAll(async () => {
    await stores?.close();
    await proxy?.down();
    await scratch?.drop();
  });

  it('is 200, then 503 problem+json while the database is unreachable, then 200 again once it is back', async () => {
    expect(await call(app, 'GET', '/readyz', { version: null })).toMatchObject({ status: 200, body: { status: 'ok' } });
    await proxy.down();
    const down = await call(app, 'GET', '/readyz', { version: null });
    expect(down.status).toBe(503);
    expect(down.headers.get('content-type')).toBe('application/problem+json');
    expect(down.body).toMatchObject({
      code: 'error.store.unavailable',
      status: 503,
      dependency: 'database',
      reason: 'unreachable',
      detail: 'The database does not answer.',
    });
    expect((await call(app, 'GET', '/healthz', { version: null })).status).toBe(200);
    await proxy.up();
    // The pool drops the dead connections and opens new ones by itself.
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await call(app, 'GET', '/readyz', { version: null })).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
  });
});
