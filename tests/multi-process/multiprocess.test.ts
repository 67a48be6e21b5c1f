import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { codeForStep, stepAt } from '@strongroom/core';
import { TestDevice, TestIdentity, totpSecretBytes } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { fetchCall, type CallOptions, type Reply } from '../harness/http.js';
import { runCliProcess, startServer as startProcess, type ServerProcess } from '../harness/spawn.js';

/**
 * Two real server processes over one PostgreSQL database: whatever one process decides, the other
 * must honour on its very next request, because neither caches session validity. PGlite lives inside
 * one process, so this needs a PostgreSQL server: PG_URL (set by .ci/run).
 */

const PG_URL = pgUrlFromEnv();
const PASSWORD = 'correct horse battery staple';
// Every process of one deployment shares its public base URL: it is the tokens' `iss`.
const BASE_URL = 'http://127.0.0.1:8080';
const HARD_LIMIT = 1000;
/**
 * What processes of one deployment share besides the database: the key sealing TOTP secrets and the
 * blob directory (one data dir). Set explicitly, as a deployment on several hosts would.
 */
const SHARED_ENV = {
  SVC_SECRET_KEY: randomBytes(32).toString('base64url'),
  SVC_QUOTA_SOFT_BYTES: '600',
  SVC_QUOTA_HARD_BYTES: String(HARD_LIMIT),
};
const DATA_DIR = mkdtempSync(join(tmpdir(), 'sr-multiproc-'));

if (!PG_URL) {
  console.warn(
    'multiprocess.test.ts: SKIPPED: PG_URL is not set. Several server processes need a PostgreSQL server; PGlite is in-process only. .ci/run sets PG_URL.',
  );
}

type Server = ServerProcess;

/** A server process of this deployment over `databaseUrl`. */
const startServer = (databaseUrl: string): Promise<Server> =>
  startProcess({
    env: { ...SHARED_ENV, SVC_DATA_DIR: DATA_DIR, SVC_DATABASE_URL: databaseUrl, SVC_BASE_URL: BASE_URL },
  });

/** Runs the operator CLI as a separate process against the same database. */
const cli = (databaseUrl: string, ...args: string[]) =>
  runCliProcess(args, { ...SHARED_ENV, SVC_DATA_DIR: DATA_DIR, SVC_DATABASE_URL: databaseUrl, SVC_BASE_URL: BASE_URL });

const call = (server: Server, method: string, path: string, o: CallOptions = {}): Promise<Reply> =>
  fetchCall(server.url, method, path, o);

interface Pair {
  session_id: string;
  session_token: string;
  access_token: string;
}
let n = 0;
async function register(server: Server): Promise<{ address: string; pair: Pair }> {
  const address = `mp${++n}-${Math.random().toString(36).slice(2, 8)}@example.org`;
  const r = await call(server, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
  expect(r.status).toBe(200);
  return { address, pair: r.body as Pair };
}
async function login(server: Server, address: string, password = PASSWORD): Promise<Reply> {
  return call(server, 'POST', '/v1/auth/login', { body: { address, password } });
}
const kidOf = (jwt: string): string =>
  (JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()) as { kid: string }).kid;

describe.skipIf(!PG_URL)('two server processes over one PostgreSQL database (PG_URL)', { timeout: 60_000 }, () => {
  let db: ScratchDatabase;
  let a: Server;
  let b: Server;
  const extra: Server[] = [];

  beforeAll(async () => {
    db = await createScratchDatabase(PG_URL!, 'multiproc');
    // Started together on an empty database: the migration lock lets exactly one migrate.
    [a, b] = await Promise.all([startServer(db.url), startServer(db.url)]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([a, b, ...extra].filter(Boolean).map((s) => s.stop()));
    await db?.drop();
    rmSync(DATA_DIR, { recursive: true, force: true });
  });

  it('both processes serve the same accounts', async () => {
    const { address, pair } = await register(a);
    expect((await call(b, 'GET', '/v1/auth/profile', { token: pair.access_token })).body).toMatchObject({ address });
    expect((await login(b, address)).status).toBe(200);
  });

  it('a session revoked through A is refused by B on its next request', async () => {
    const { address, pair } = await register(a);
    const other = (await login(a, address)).body as Pair;
    expect((await call(b, 'GET', '/v1/auth/profile', { token: pair.access_token })).status).toBe(200);
    expect(
      (await call(a, 'DELETE', `/v1/auth/sessions/${pair.session_id}`, { token: other.access_token })).status,
    ).toBe(204);
    const refused = await call(b, 'GET', '/v1/auth/profile', { token: pair.access_token });
    expect(refused).toMatchObject({ status: 401, body: { code: 'error.auth.session_invalid' } });
    expect((await call(b, 'POST', '/v1/auth/refresh', { body: { session_token: pair.session_token } })).body.code).toBe(
      'error.auth.session_invalid',
    );
    expect((await call(b, 'GET', '/v1/auth/profile', { token: other.access_token })).status).toBe(200);
  });

  it('a password change through A closes the sessions B would honour', async () => {
    const { address, pair: mine } = await register(a);
    const onB = (await login(b, address)).body as Pair;
    expect((await call(b, 'GET', '/v1/auth/profile', { token: onB.access_token })).status).toBe(200);
    const changed = await call(a, 'POST', '/v1/auth/password', {
      token: mine.access_token,
      body: { current_password: PASSWORD, new_password: 'another long passphrase' },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.session_id).toBe(mine.session_id);
    // B: the other session, its refresh, and the caller's pre-change access token are all refused.
    expect((await call(b, 'GET', '/v1/auth/profile', { token: onB.access_token })).body.code).toBe(
      'error.auth.session_invalid',
    );
    expect((await call(b, 'POST', '/v1/auth/refresh', { body: { session_token: onB.session_token } })).status).toBe(
      401,
    );
    expect((await call(b, 'GET', '/v1/auth/profile', { token: mine.access_token })).status).toBe(401);
    expect((await call(b, 'POST', '/v1/auth/refresh', { body: { session_token: mine.session_token } })).status).toBe(
      401,
    );
    // ... and the caller's fresh pair works there.
    expect((await call(b, 'GET', '/v1/auth/profile', { token: changed.body.access_token })).status).toBe(200);
    expect(
      (await call(b, 'POST', '/v1/auth/refresh', { body: { session_token: changed.body.session_token } })).status,
    ).toBe(200);
    expect((await login(b, address)).status).toBe(401);
    expect((await login(b, address, 'another long passphrase')).status).toBe(200);
  });

  it('a signing key rotated by another process (CLI rotate-key) verifies on both', async () => {
    const { pair: before } = await register(a);
    const oldKid = kidOf(before.access_token);
    const rotated = await cli(db.url, 'rotate-key');
    expect(rotated, rotated.out).toMatchObject({ code: 0 });
    // A process started after the rotation signs with the new key...
    const c = await startServer(db.url);
    extra.push(c);
    const { pair: after } = await register(c);
    expect(kidOf(after.access_token)).not.toBe(oldKid);
    // ...and A and B, whose key rings were loaded before it, verify that token on first sight,
    for (const s of [a, b])
      expect((await call(s, 'GET', '/v1/auth/profile', { token: after.access_token })).status).toBe(200);
    // while the token signed under the retired key still verifies everywhere (grace window).
    for (const s of [a, b, c])
      expect((await call(s, 'GET', '/v1/auth/profile', { token: before.access_token })).status).toBe(200);
    const jwks = (await call(c, 'GET', '/.well-known/svc/server-info')).body.signing_keys.keys.map(
      (k: { kid: string }) => k.kid,
    );
    expect(jwks).toEqual(expect.arrayContaining([oldKid, kidOf(after.access_token)]));
  });

  it('40 concurrent upload-session creations for one account, split across A and B, never pass the hard limit', async () => {
    const { pair } = await register(a);
    const token = pair.access_token;
    const accountId = (await call(a, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
    const directory = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
    expect((await call(b, 'PUT', '/v1/devices/directory', { token, cbor: directory })).status).toBeLessThan(300);
    const size = 30;
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(i % 2 === 0 ? a : b, 'POST', '/upload', {
          token,
          body: { declared_size: size, kind: 'original', device_id: 'phone' },
        }),
      ),
    );
    const admitted = replies.filter((r) => r.status === 201).length;
    const refused = replies.filter((r) => r.status === 403 && r.body.code === 'error.quota.exceeded').length;
    // Exactly as many as fit: none over the limit, and none refused that would have fitted.
    expect({ admitted, refused }).toEqual({
      admitted: Math.floor(HARD_LIMIT / size),
      refused: 40 - Math.floor(HARD_LIMIT / size),
    });
    for (const s of [a, b]) {
      expect((await call(s, 'GET', '/quota', { token })).body).toMatchObject({
        used: admitted * size,
        reserved: admitted * size,
        hard_limit: HARD_LIMIT,
      });
    }
  });

  it('a TOTP code accepted by A is refused by B', async () => {
    const { address, pair } = await register(a);
    const enrolled = await call(a, 'POST', '/v1/auth/totp/enroll', { token: pair.access_token });
    expect(enrolled.status).toBe(200);
    const secret = totpSecretBytes(enrolled.body.secret);
    // Steps below are relative to this one: start early in a step so the test never straddles two.
    const into = Date.now() % 30_000;
    if (into > 20_000) await new Promise((r) => setTimeout(r, 30_100 - into));
    const step = stepAt(Date.now());
    // Confirmed through B with the previous step's code (within the drift), so the current step is still unused.
    expect(
      (
        await call(b, 'POST', '/v1/auth/totp/verify-enrollment', {
          token: pair.access_token,
          body: { code: codeForStep(secret, step - 1) },
        })
      ).status,
    ).toBeLessThan(300);
    const onA = await login(a, address);
    const onB = await login(b, address);
    expect([onA.status, onB.status]).toEqual([202, 202]);
    const code = codeForStep(secret, step);
    const accepted = await call(a, 'POST', '/v1/auth/login/verify-totp', {
      body: { challenge: onA.body.challenge, code },
    });
    expect(accepted.status).toBe(200);
    const replayed = await call(b, 'POST', '/v1/auth/login/verify-totp', {
      body: { challenge: onB.body.challenge, code },
    });
    expect(replayed).toMatchObject({ status: 401, body: { code: 'error.auth.invalid_code' } });
    // B still takes the next step's code: the refusal was the replay ledger, not a broken factor.
    const next = await call(b, 'POST', '/v1/auth/login/verify-totp', {
      body: { challenge: onB.body.challenge, code: codeForStep(secret, step + 1) },
    });
    expect(next.status).toBe(200);
  });

  it('both processes outlive having every database connection killed, and serve on without a restart', async () => {
    const { pair } = await register(a);
    for (const s of [a, b])
      expect((await call(s, 'GET', '/v1/auth/profile', { token: pair.access_token })).status).toBe(200);
    const admin = new pg.Client({ connectionString: db.url });
    admin.on('error', () => undefined);
    await admin.connect();
    let killed: number;
    try {
      // Waiting for each backend to be gone: without the timeout, the call returns once the signal
      // is sent, and a backend slow to act on it still answers the next query.
      const result = await admin.query(
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'strongroom'",
      );
      killed = result.rowCount ?? 0;
      expect(killed).toBeGreaterThanOrEqual(2);
    } finally {
      await admin.end();
    }
    // Each process hears its idle connections end (it logs them). Behind PgBouncer (the CI's second
    // pass) the processes' connections are the pooler's, which absorbs the loss: nothing to hear.
    if (process.env.STRONGROOM_TEST_PGBOUNCER !== '1') {
      const heard = (s: typeof a) => s.events.some((e) => e.event === 'db.connection_lost');
      for (let i = 0; i < 1_000 && !(heard(a) && heard(b)); i++) await new Promise((r) => setTimeout(r, 10));
      expect([heard(a), heard(b)]).toEqual([true, true]);
    }
    // An unheard 'error' from an idle pooled connection would have ended the process.
    expect([a.child.exitCode, b.child.exitCode]).toEqual([null, null]);
    // A connection whose end a process has not yet read when a request takes it fails that request,
    // closed (spec §4.6: 401 error.auth.unavailable), and is dropped: each killed connection costs at
    // most one refused request, and then the process answers as before.
    for (const s of [a, b]) {
      const refused: unknown[] = [];
      for (;;) {
        const r = await call(s, 'GET', '/v1/auth/profile', { token: pair.access_token });
        if (r.status === 200) break;
        refused.push({ status: r.status, body: r.body });
        expect(r).toMatchObject({ status: 401, body: { code: 'error.auth.unavailable' } });
        expect(refused.length, JSON.stringify(refused)).toBeLessThanOrEqual(killed);
      }
    }
  });
});
