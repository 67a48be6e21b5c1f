import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchCall, PASSWORD, VERSION } from '../harness/http.js';
import { openRaw, requestHead } from '../harness/fault/raw-http.js';
import { startServerProcess, type ServerProcess } from '../harness/spawn.js';

/**
 * Slow clients against the real server: headers or a body trickling in, a body that stalls, and an
 * idle kept-alive connection are each cut off by the Node server's timeouts, and while many uploads
 * trickle in, other requests are served at once: a request waiting for its bytes holds no database
 * connection (on PostgreSQL, more trickling uploads than the pool has connections; needs PG_URL).
 */

const TIMEOUTS = {
  SVC_HEADERS_TIMEOUT_S: '1',
  SVC_REQUEST_TIMEOUT_S: '3',
  SVC_IDLE_TIMEOUT_S: '1',
  SVC_KEEPALIVE_TIMEOUT_S: '1',
};
const PG_URL = pgUrlFromEnv();
/** More than the server's pool (10 connections per process). */
const SLOW_UPLOADS = 14;

if (!PG_URL) console.warn('slow-clients.test.ts: the PostgreSQL case is SKIPPED: PG_URL is not set.');

async function account(url: string): Promise<{ token: string }> {
  const address = `slow-${Math.random().toString(36).slice(2, 10)}@example.org`;
  const token = (await fetchCall(url, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } })).body
    .access_token as string;
  const accountId = (await fetchCall(url, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const directory = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  expect((await fetchCall(url, 'PUT', '/v1/devices/directory', { token, cbor: directory })).status).toBeLessThan(300);
  return { token };
}

async function createUpload(url: string, token: string, size = 1000): Promise<string> {
  const r = await fetchCall(url, 'POST', '/upload', {
    token,
    body: { declared_size: size, kind: 'original', device_id: 'phone' },
  });
  expect(r.status).toBe(201);
  return r.body.upload_id as string;
}

/** Trickling uploads hold the handler (their sessions read Uploading), yet other requests answer at once. */
async function servesBesideTrickles(server: ServerProcess): Promise<void> {
  const { token } = await account(server.url);
  const ids = await Promise.all(Array.from({ length: SLOW_UPLOADS }, () => createUpload(server.url, token)));
  const slow = await Promise.all(ids.map(() => openRaw(server.port)));
  slow.forEach((conn, i) => {
    conn.write(
      requestHead('PUT', `/upload/${ids[i]}`, {
        authorization: `Bearer ${token}`,
        'x-svc-protocol': VERSION,
        'content-type': 'application/octet-stream',
        'content-length': 1000,
      }),
    );
    void conn.trickle('x'.repeat(1000), 200);
  });
  const states = () =>
    Promise.all(ids.map(async (id) => (await fetchCall(server.url, 'GET', `/upload/${id}`, { token })).body.state));
  // Until every trickling upload is inside its handler (within 10 s), each answered meanwhile.
  const deadline = Date.now() + 10_000;
  while ((await states()).some((s) => s !== 'Uploading') && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 20));
  expect(await states(), 'every trickling upload is inside its handler').toEqual(ids.map(() => 'Uploading'));
  for (let i = 0; i < 5; i++) {
    const started = Date.now();
    const [quota, created] = await Promise.all([
      fetchCall(server.url, 'GET', '/quota', { token }),
      fetchCall(server.url, 'POST', '/upload', {
        token,
        body: { declared_size: 5, kind: 'original', device_id: 'phone' },
      }),
    ]);
    expect([quota.status, created.status]).toEqual([200, 201]);
    expect(Date.now() - started, 'answered without waiting for a database connection').toBeLessThan(1_500);
  }
  // And the trickles themselves are cut at the request timeout (3 s, checked every second).
  const cut = await Promise.all(slow.map((c) => c.closed));
  for (const ms of cut) expect(ms).toBeLessThan(6_000);
  for (const c of slow) expect(c.received()).not.toMatch(/^HTTP\/1\.1 2/);
}

describe('slow clients (SQLite)', { timeout: 60_000 }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sr-slow-'));
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess({ dataDir, env: TIMEOUTS });
  }, 60_000);
  afterAll(async () => {
    await server?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('headers trickling in are cut at the headers timeout', async () => {
    const conn = await openRaw(server.port);
    void conn.trickle(
      `GET /.well-known/svc/server-info HTTP/1.1\r\nhost: 127.0.0.1\r\nx-padding: ${'a'.repeat(100)}\r\n\r\n`,
      100,
    );
    const ms = await conn.closed;
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(3_000);
    expect(conn.received()).toMatch(/^(HTTP\/1\.1 408 |$)/);
  });

  it('a body trickling in is cut at the request timeout, one that stalls at the idle timeout', async () => {
    const { token } = await account(server.url);
    const head = (id: string) =>
      requestHead('PUT', `/upload/${id}`, {
        authorization: `Bearer ${token}`,
        'x-svc-protocol': VERSION,
        'content-type': 'application/octet-stream',
        'content-length': 1000,
      });
    const [a, b] = await Promise.all([createUpload(server.url, token), createUpload(server.url, token)]);
    const trickling = await openRaw(server.port);
    trickling.write(head(a));
    void trickling.trickle('y'.repeat(1000), 150);
    const stalled = await openRaw(server.port);
    stalled.write(`${head(b)}zz`);
    const [tricklingMs, stalledMs] = await Promise.all([trickling.closed, stalled.closed]);
    // Bytes keep moving, so only the whole-request bound ends it: after 3 s, at most a check later.
    expect(tricklingMs).toBeGreaterThanOrEqual(2_900);
    expect(tricklingMs).toBeLessThan(5_500);
    // Nothing moves: the idle timeout (1 s) ends it well before the request timeout.
    expect(stalledMs).toBeGreaterThanOrEqual(900);
    expect(stalledMs).toBeLessThan(2_500);
    for (const c of [trickling, stalled]) expect(c.received()).not.toMatch(/^HTTP\/1\.1 2/);
    // Nothing was kept of either: the sessions are open again (Pending), ready for another PUT.
    // The server learns of the cut asynchronously (the body stream errors, then the session is reopened):
    // give it a bounded moment on a loaded machine before judging.
    for (const id of [a, b]) {
      const until = Date.now() + 3_000;
      let state = '';
      do {
        state = (await fetchCall(server.url, 'GET', `/upload/${id}`, { token })).body.state;
        if (state !== 'Pending') await new Promise((r) => setTimeout(r, 100));
      } while (state !== 'Pending' && Date.now() < until);
      expect(state).toBe('Pending');
    }
  });

  it('an idle kept-alive connection is closed at the keep-alive timeout', async () => {
    const conn = await openRaw(server.port);
    conn.write(requestHead('GET', '/.well-known/svc/server-info', {}));
    const ms = await conn.closed;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(3_000);
  });

  it('serves other requests at once while many uploads trickle in', async () => {
    await servesBesideTrickles(server);
  });
});

describe.skipIf(!PG_URL)('slow clients hold no PostgreSQL connection (PG_URL)', { timeout: 60_000 }, () => {
  let dataDir = '';
  let db: ScratchDatabase;
  let server: ServerProcess;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sr-slow-pg-'));
    db = await createScratchDatabase(PG_URL!, 'slowclients');
    // The database must give up before a socket timeout could cut a request waiting on it (the
    // server refuses to start otherwise): 1 s + 1 s of database waits under a 3 s idle timeout.
    // Trickles move a byte every 200 ms, so the idle timeout does not touch them.
    const env = {
      ...TIMEOUTS,
      SVC_IDLE_TIMEOUT_S: '3',
      SVC_DB_STATEMENT_TIMEOUT_S: '1',
      SVC_DB_CONNECT_TIMEOUT_S: '1',
      SVC_DATABASE_URL: db.url,
    };
    server = await startServerProcess({ dataDir, env });
  }, 60_000);
  afterAll(async () => {
    await server?.kill();
    await db?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it(`serves other requests at once while ${SLOW_UPLOADS} uploads (more than the pool) trickle in`, async () => {
    await servesBesideTrickles(server);
  });
});
