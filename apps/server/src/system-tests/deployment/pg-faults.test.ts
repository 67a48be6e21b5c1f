import type { Hono } from 'hono';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLogger, TestDevice, TestIdentity } from '@strongroom/core/testing';
import { createScratchDatabase, pgUrlFromEnv, TcpProxy, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { createApp } from '../../app.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores, type Stores } from '../../deps.js';
import { call } from '@strongroom/tests';

/**
 * Connection faults under a server on PostgreSQL: connections killed under a request, and a database
 * that stops accepting connections. Authenticated requests must fail closed (401, refresh 503, both
 * error.auth.unavailable), nothing may be half-written, and the pool must recover by itself.
 * Killing backends and proxying TCP needs a PostgreSQL server: PG_URL.
 */

const PG_URL = pgUrlFromEnv();
const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a different long passphrase';

if (!PG_URL) {
  console.warn(
    'pg-faults.test.ts: SKIPPED: PG_URL is not set. Killing database connections needs a PostgreSQL server; .ci/run sets PG_URL.',
  );
}

interface Pair {
  session_id: string;
  session_token: string;
  access_token: string;
}

describe.skipIf(!PG_URL)('PostgreSQL connection faults (PG_URL)', { timeout: 60_000 }, () => {
  let scratch: ScratchDatabase;
  let proxy: TcpProxy;
  let stores: Stores;
  let app: Hono;
  let admin: pg.Pool;
  let dbName: string;
  let n = 0;
  const logger = new MemoryLogger();

  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'faults');
    const target = new URL(scratch.url);
    dbName = target.pathname.slice(1);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    // A fixed key, so the test does not generate secret.key into the working directory's ./data.
    const config = readConfig({
      SVC_DATABASE_URL: proxy.urlFor(scratch.url),
      SVC_BASE_URL: 'http://127.0.0.1:8080',
      SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
    });
    stores = await openStores(config);
    app = createApp(await buildDeps(config, stores, { ...nodePlatform(), logger }));
    admin = new pg.Pool({ connectionString: scratch.url, max: 2 });
    admin.on('error', () => undefined);
  }, 60_000);
  afterAll(async () => {
    await stores?.close();
    await admin?.end();
    await proxy?.down();
    await scratch?.drop();
  });

  async function register(): Promise<{ address: string; pair: Pair }> {
    const address = `fault${++n}@example.org`;
    const r = await call(app, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
    expect(r.status).toBe(200);
    return { address, pair: r.body as Pair };
  }

  /** Waits until `count` of the server's connections are blocked on a lock, i.e. those requests are mid-flight in the database. */
  async function waitForBlockedBackend(count = 1): Promise<string> {
    for (let i = 0; i < 200; i++) {
      const { rows } = await admin.query(
        "SELECT query FROM pg_stat_activity WHERE datname = $1 AND application_name = 'strongroom' AND wait_event_type = 'Lock'",
        [dbName],
      );
      if (rows.length >= count) return String(rows[0].query);
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('no server connection ever blocked');
  }
  const terminateServerBackends = () =>
    admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'strongroom'",
      [dbName],
    );

  /** Runs `body` inside an admin transaction (whose locks park the server's statements), then rolls it back. */
  async function holding(lock: string, params: unknown[], body: () => Promise<void>): Promise<void> {
    const client = await admin.connect();
    try {
      await client.query('BEGIN');
      await client.query(lock, params);
      await body();
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  }

  it('a connection killed under an authenticated request fails it closed (401), and the next request succeeds', async () => {
    const { pair } = await register();
    // Holding the table lock parks the server's session read inside PostgreSQL.
    await holding('LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE', [], async () => {
      const inFlight = call(app, 'GET', '/v1/auth/profile', { token: pair.access_token });
      const refresh = call(app, 'POST', '/v1/auth/refresh', { body: { session_token: pair.session_token } });
      await waitForBlockedBackend(2);
      await terminateServerBackends();
      const refused = await inFlight;
      expect(refused).toMatchObject({ status: 401, body: { code: 'error.auth.unavailable' } });
      // Nothing refused the token itself: the challenge names the scheme without error="invalid_token".
      expect(refused.headers.get('www-authenticate')).toBe('Bearer');
      expect(await refresh).toMatchObject({ status: 503, body: { code: 'error.auth.unavailable' } });
    });
    expect((await call(app, 'GET', '/v1/auth/profile', { token: pair.access_token })).status).toBe(200);
    expect((await call(app, 'POST', '/v1/auth/refresh', { body: { session_token: pair.session_token } })).status).toBe(
      200,
    );
  });

  it('a statement cut off under a request is logged without its parameters (an address here; a link id elsewhere)', async () => {
    const { address } = await register();
    logger.lines.length = 0;
    await holding('LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE', [], async () => {
      const login = call(app, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } });
      await waitForBlockedBackend();
      await terminateServerBackends();
      expect((await login).status).toBe(503);
    });
    const failures = logger.lines.filter((l) => l.event === 'store.unavailable');
    expect(failures.length).toBeGreaterThan(0);
    expect(JSON.stringify(logger.lines)).not.toContain(address);
    // What the database said is still there for the operator.
    expect(String(failures[0]!.fields?.error)).toMatch(/postgres FATAL 57P01|terminat/i);
  });

  it('a password change killed mid-transaction leaves nothing half-written', async () => {
    const { address, pair } = await register();
    const other = (await call(app, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } })).body as Pair;
    // The change updates the caller's session first, then blocks on the account row held here.
    await holding('SELECT 1 FROM accounts WHERE address_key = $1 FOR UPDATE', [address], async () => {
      const change = call(app, 'POST', '/v1/auth/password', {
        token: pair.access_token,
        body: { current_password: PASSWORD, new_password: NEW_PASSWORD },
      });
      await waitForBlockedBackend();
      await terminateServerBackends();
      const r = await change;
      expect(r.status).toBe(503);
      expect(r.body.code).toMatch(/^error\.(store|auth)\.unavailable$/);
    });
    // Rolled back whole: old password, old session token, old access token, other session all as before.
    expect((await call(app, 'POST', '/v1/auth/login', { body: { address, password: NEW_PASSWORD } })).status).toBe(401);
    expect((await call(app, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } })).status).toBe(200);
    expect((await call(app, 'GET', '/v1/auth/profile', { token: pair.access_token })).status).toBe(200);
    expect((await call(app, 'POST', '/v1/auth/refresh', { body: { session_token: pair.session_token } })).status).toBe(
      200,
    );
    expect((await call(app, 'GET', '/v1/auth/profile', { token: other.access_token })).status).toBe(200);
    // And the retried change goes through.
    expect(
      (
        await call(app, 'POST', '/v1/auth/password', {
          token: pair.access_token,
          body: { current_password: PASSWORD, new_password: NEW_PASSWORD },
        })
      ).status,
    ).toBe(200);
  });

  it('an upload-session creation killed mid-transaction reserves nothing and writes no session', async () => {
    const { pair } = await register();
    const token = pair.access_token;
    const accountId = (await call(app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
    const directory = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
    expect((await call(app, 'PUT', '/v1/devices/directory', { token, cbor: directory })).status).toBeLessThan(300);
    const body = { declared_size: 100, kind: 'original', device_id: 'phone', content_hash: 'ab'.repeat(32) };
    const before = (await call(app, 'GET', '/quota', { token })).body;
    // Creation's transaction starts with one statement that locks the payer's quota row (then
    // expires and looks up hashes): holding that row parks it there, inside the transaction.
    await admin.query('INSERT INTO quota_accounts (account_id) VALUES ($1) ON CONFLICT DO NOTHING', [accountId]);
    await holding('SELECT 1 FROM quota_accounts WHERE account_id = $1 FOR UPDATE', [accountId], async () => {
      const open = call(app, 'POST', '/upload', { token, body });
      expect(await waitForBlockedBackend()).toMatch(/FROM "quota_accounts"[\s\S]*FOR UPDATE/i);
      await terminateServerBackends();
      expect(await open).toMatchObject({ status: 503, body: { code: 'error.store.unavailable' } });
    });
    expect((await call(app, 'GET', '/quota', { token })).body).toMatchObject({
      used: before.used,
      reserved: before.reserved,
    });
    const { rows } = await admin.query('SELECT count(*)::int AS n FROM upload_sessions WHERE payer_id = $1', [
      accountId,
    ]);
    expect(rows[0].n).toBe(0);
    // Retried, it reserves exactly once.
    expect((await call(app, 'POST', '/upload', { token, body })).status).toBe(201);
    expect((await call(app, 'GET', '/quota', { token })).body.reserved).toBe(before.reserved + 100);
  });

  it('a database that stops accepting connections: fail closed, then recover without a restart', async () => {
    const { address, pair } = await register();
    await proxy.down();
    try {
      const started = Date.now();
      expect(await call(app, 'GET', '/v1/auth/profile', { token: pair.access_token })).toMatchObject({
        status: 401,
        body: { code: 'error.auth.unavailable' },
      });
      expect(await call(app, 'GET', '/v1/auth/sessions', { token: pair.access_token })).toMatchObject({
        status: 401,
        body: { code: 'error.auth.unavailable' },
      });
      expect(
        await call(app, 'POST', '/v1/auth/refresh', { body: { session_token: pair.session_token } }),
      ).toMatchObject({ status: 503, body: { code: 'error.auth.unavailable' } });
      const login = await call(app, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } });
      expect(login.status).toBe(503);
      // Refused promptly, not after a hung request.
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await proxy.up();
    }
    expect((await call(app, 'GET', '/v1/auth/profile', { token: pair.access_token })).status).toBe(200);
    expect((await call(app, 'POST', '/v1/auth/refresh', { body: { session_token: pair.session_token } })).status).toBe(
      200,
    );
    // Nothing was recorded while it was down: exactly the sessions opened before and after.
    expect((await call(app, 'GET', '/v1/auth/sessions', { token: pair.access_token })).body.sessions).toHaveLength(1);
  });
});
