import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createScratchDatabase,
  pgbouncerBinary,
  pgUrlFromEnv,
  startPgBouncer,
  type RunningPgBouncer,
  type ScratchDatabase,
} from '@strongroom/adapters-pg/testing';
import { fetchCall, type CallOptions, type Reply } from '../harness/http.js';
import { runCliProcess, startServer as startProcess, type ServerProcess } from '../harness/spawn.js';

/**
 * Two server processes over one PostgreSQL database through a real PgBouncer in transaction mode,
 * as a fleet that outgrew PostgreSQL's connection limit runs: PgBouncer holds three server
 * connections for the processes' twenty, so any state one transaction left on a connection is met
 * by another process's next one. Needs PG_URL and Debian's pgbouncer (.ci/run installs it).
 */

const PG_URL = pgUrlFromEnv();
const reason = !PG_URL
  ? 'PG_URL is not set'
  : !pgbouncerBinary()
    ? 'pgbouncer is not installed (apt-get install pgbouncer)'
    : null;
if (reason) console.warn(`pgbouncer-multiprocess.test.ts: SKIPPED: ${reason}.`);

const PASSWORD = 'correct horse battery staple';
const BASE_URL = 'http://127.0.0.1:8080';
const HARD_LIMIT = 1000;
const DATA_DIR = mkdtempSync(join(tmpdir(), 'sr-pgbouncer-mp-'));
const SHARED_ENV = {
  SVC_SECRET_KEY: randomBytes(32).toString('base64url'),
  SVC_QUOTA_SOFT_BYTES: '600',
  SVC_QUOTA_HARD_BYTES: String(HARD_LIMIT),
  SVC_DATA_DIR: DATA_DIR,
  SVC_BASE_URL: BASE_URL,
  SVC_PG_POOLER: 'transaction',
};

const call = (server: ServerProcess, method: string, path: string, o: CallOptions = {}): Promise<Reply> =>
  fetchCall(server.url, method, path, o);

interface Pair {
  session_id: string;
  session_token: string;
  access_token: string;
}
let n = 0;
async function register(server: ServerProcess): Promise<{ address: string; pair: Pair }> {
  const address = `pb${++n}-${Math.random().toString(36).slice(2, 8)}@example.org`;
  const r = await call(server, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
  expect(r.status).toBe(200);
  return { address, pair: r.body as Pair };
}

describe.skipIf(reason !== null)(
  'two server processes through PgBouncer in transaction mode (PG_URL, SVC_PG_POOLER=transaction)',
  { timeout: 60_000 },
  () => {
    let db: ScratchDatabase;
    let bouncer: RunningPgBouncer;
    let url: string;
    let a: ServerProcess;
    let b: ServerProcess;

    beforeAll(async () => {
      db = await createScratchDatabase(PG_URL!, 'pgbouncer_mp');
      bouncer = await startPgBouncer(PG_URL!, 3);
      url = bouncer.through(db.url);
      const start = () => startProcess({ env: { ...SHARED_ENV, SVC_DATABASE_URL: url } });
      // Started together on an empty database, through the pooler: one migrates, the other waits.
      [a, b] = await Promise.all([start(), start()]);
    }, 90_000);
    afterAll(async () => {
      await Promise.all([a, b].filter(Boolean).map((s) => s.stop()));
      await bouncer?.stop();
      await db?.drop();
      rmSync(DATA_DIR, { recursive: true, force: true });
    });

    it('signs in on either process, refreshes on the other, and a revocation through one is refused by the other', async () => {
      const { address, pair } = await register(a);
      expect((await call(b, 'GET', '/v1/auth/profile', { token: pair.access_token })).body).toMatchObject({ address });
      const other = (await call(b, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } })).body as Pair;
      expect(
        (await call(b, 'POST', '/v1/auth/login', { body: { address, password: 'wrong horse battery staple' } })).status,
      ).toBe(401);
      const refreshed = await call(b, 'POST', '/v1/auth/refresh', { body: { session_token: pair.session_token } });
      expect(refreshed.status).toBe(200);
      expect((await call(a, 'GET', '/v1/auth/profile', { token: refreshed.body.access_token })).status).toBe(200);
      const again = await call(a, 'POST', '/v1/auth/refresh', {
        body: { session_token: refreshed.body.session_token ?? pair.session_token },
      });
      expect(again.status).toBe(200);
      expect(
        (await call(a, 'DELETE', `/v1/auth/sessions/${pair.session_id}`, { token: other.access_token })).status,
      ).toBe(204);
      expect((await call(b, 'GET', '/v1/auth/profile', { token: again.body.access_token })).body.code).toBe(
        'error.auth.session_invalid',
      );
      expect(
        (
          await call(b, 'POST', '/v1/auth/refresh', {
            body: { session_token: refreshed.body.session_token ?? pair.session_token },
          })
        ).status,
      ).toBe(401);
      expect((await call(b, 'GET', '/v1/auth/profile', { token: other.access_token })).status).toBe(200);
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

    it('the operator CLI through the pooler locks an account, and both processes end its sessions', async () => {
      const { address, pair } = await register(a);
      const onB = (await call(b, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } })).body as Pair;
      const locked = await runCliProcess(['lock', address], { ...SHARED_ENV, SVC_DATABASE_URL: url });
      expect(locked, locked.out).toMatchObject({ code: 0 });
      for (const [s, p] of [
        [a, onB],
        [b, pair],
      ] as const) {
        expect((await call(s, 'GET', '/v1/auth/profile', { token: p.access_token })).status).toBe(401);
        expect((await call(s, 'POST', '/v1/auth/refresh', { body: { session_token: p.session_token } })).status).toBe(
          401,
        );
      }
    });
  },
);
