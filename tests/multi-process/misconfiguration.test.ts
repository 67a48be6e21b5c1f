import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codeForStep, stepAt } from '@strongroom/core';
import { totpSecretBytes } from '@strongroom/core/testing';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchCall, type CallOptions, type Reply } from '../harness/http.js';
import { refusedServer, runCliProcess, startServer, TEST_BASE_URL, type ServerProcess } from '../harness/spawn.js';

/**
 * Real server processes started unlike the others on their database: each must refuse to start,
 * naming the variable, instead of failing requests later. And the second-factor throttle, held in
 * the database, binds every process of a deployment. PostgreSQL cases need PG_URL (several
 * processes cannot share a PGlite).
 */

const PG_URL = pgUrlFromEnv();
const PASSWORD = 'correct horse battery staple';
const BASE_URL = TEST_BASE_URL;
const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'sr-misconf-'));
  dirs.push(d);
  return d;
};
const newKey = (): string => randomBytes(32).toString('base64url');

type Server = ServerProcess;

/** Starts the server with `env` over the test defaults; a variable given as undefined is unset. */
const started = (env: Record<string, string | undefined>): Promise<Server> => startServer({ env });
const refused = (env: Record<string, string | undefined>): Promise<{ code: number | null; stderr: string }> =>
  refusedServer({ env });

afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The start-up cases, each on a fresh database from `fresh` (its environment and how to drop it). */
function misconfigurationCases(
  label: string,
  fresh: () => Promise<{ env: Record<string, string>; drop(): Promise<void> }>,
): void {
  // Each case has a database and processes of its own: they run at once, as their processes mostly wait.
  describe(`start-up checks on ${label}`, { timeout: 90_000, concurrent: true }, () => {
    it('a process with another SVC_SECRET_KEY is refused at start, naming the variable and never the key', async () => {
      const { env, drop } = await fresh();
      const key = newKey();
      const first = await started({ ...env, SVC_SECRET_KEY: key });
      try {
        const other = newKey();
        const r = await refused({ ...env, SVC_SECRET_KEY: other });
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/SVC_SECRET_KEY/);
        expect(r.stderr).not.toContain(other);
        expect(r.stderr).not.toContain(key);
        // The same key starts fine beside the first process.
        const second = await started({ ...env, SVC_SECRET_KEY: key });
        await second.stop();
      } finally {
        await first.stop();
        await drop();
      }
    });

    it('a process with another SVC_BASE_URL is refused at start; adopt-base-url moves the deployment', async () => {
      const { env, drop } = await fresh();
      try {
        const key = newKey();
        const first = await started({ ...env, SVC_SECRET_KEY: key });
        await first.stop();
        const r = await refused({ ...env, SVC_SECRET_KEY: key, SVC_BASE_URL: 'https://photos.example' });
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/SVC_BASE_URL/);
        expect(r.stderr).toContain(BASE_URL);
        const adopt = await cli(
          { ...env, SVC_SECRET_KEY: key, SVC_BASE_URL: 'https://photos.example' },
          'adopt-base-url',
        );
        expect(adopt).toMatchObject({ code: 0, out: expect.stringContaining('https://photos.example') });
        const moved = await started({ ...env, SVC_SECRET_KEY: key, SVC_BASE_URL: 'https://photos.example' });
        await moved.stop();
        expect((await refused({ ...env, SVC_SECRET_KEY: key })).stderr).toMatch(/SVC_BASE_URL/);
        // adopt-base-url never adopts a key: with another one it is refused like a server.
        expect((await cli({ ...env, SVC_SECRET_KEY: newKey(), SVC_BASE_URL: BASE_URL }, 'adopt-base-url')).out).toMatch(
          /SVC_SECRET_KEY/,
        );
      } finally {
        await drop();
      }
    });
  });
}

const cli = (env: Record<string, string>, ...args: string[]) => runCliProcess(args, env);

misconfigurationCases('SQLite', async () => ({ env: { SVC_DATA_DIR: tempDir() }, drop: async () => undefined }));

describe('SQLite data dir key file', { concurrent: true }, () => {
  it('counts as the key: a process with SVC_SECRET_KEY set differently is refused', { timeout: 90_000 }, async () => {
    const dir = tempDir();
    const first = await started({ SVC_DATA_DIR: dir });
    await first.stop();
    expect((await refused({ SVC_DATA_DIR: dir, SVC_SECRET_KEY: newKey() })).stderr).toMatch(/SVC_SECRET_KEY/);
    await (await started({ SVC_DATA_DIR: dir })).stop();
  });

  it('a base URL derived from PORT (SVC_BASE_URL unset) gives way to a new port, and to a first configured one, which then binds', {
    timeout: 90_000,
  }, async () => {
    const dir = tempDir();
    await (await started({ SVC_DATA_DIR: dir, SVC_BASE_URL: undefined, PORT: '0' })).stop();
    await (
      await started({
        SVC_DATA_DIR: dir,
        SVC_BASE_URL: undefined,
        PORT: String(20_000 + Math.floor(Math.random() * 9_000)),
      })
    ).stop();
    await (await started({ SVC_DATA_DIR: dir })).stop();
    expect((await refused({ SVC_DATA_DIR: dir, SVC_BASE_URL: undefined })).stderr).toMatch(/SVC_BASE_URL is unset/);
  });
});

if (PG_URL) {
  misconfigurationCases('PostgreSQL (PG_URL)', async () => {
    const db = await createScratchDatabase(PG_URL, 'misconf');
    return { env: { SVC_DATABASE_URL: db.url, SVC_DATA_DIR: tempDir() }, drop: () => db.drop() };
  });
} else {
  console.warn(
    'misconfiguration.test.ts: PostgreSQL cases SKIPPED: PG_URL is not set (several processes cannot share a PGlite).',
  );
}

describe.skipIf(!PG_URL)(
  'second-factor throttle across two processes over one PostgreSQL database (PG_URL)',
  { timeout: 90_000 },
  () => {
    let db: ScratchDatabase;
    let a: Server;
    let b: Server;
    beforeAll(async () => {
      db = await createScratchDatabase(PG_URL!, 'throttle');
      const env = { SVC_DATABASE_URL: db.url, SVC_DATA_DIR: tempDir(), SVC_SECRET_KEY: newKey() };
      [a, b] = await Promise.all([started(env), started(env)]);
    }, 90_000);
    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await db?.drop();
    }, 30_000);
    const call = (server: Server, method: string, path: string, o: CallOptions = {}): Promise<Reply> =>
      fetchCall(server.url, method, path, o);

    it('wrong codes sent to one process hold sign-in on the other; concurrent wrong codes all count', async () => {
      const address = `throttle-${Math.random().toString(36).slice(2, 8)}@example.org`;
      const reg = await call(a, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
      expect(reg.status).toBe(200);
      const enrolled = await call(a, 'POST', '/v1/auth/totp/enroll', { token: reg.body.access_token });
      const secret = totpSecretBytes(enrolled.body.secret);
      const now = () => stepAt(Date.now());
      expect(
        (
          await call(a, 'POST', '/v1/auth/totp/verify-enrollment', {
            token: reg.body.access_token,
            body: { code: codeForStep(secret, now()) },
          })
        ).status,
      ).toBe(204);
      const wrong = () => {
        const near = new Set([-2, -1, 0, 1, 2].map((d) => codeForStep(secret, now() + d)));
        return ['000000', '111111', '222222', '333333'].find((c) => !near.has(c))!;
      };
      const login = (server: Server) =>
        call(server, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } });
      // Two challenges, one from each process; five wrong codes on each, sent to both processes at once.
      const challenges = [(await login(a)).body.challenge as string, (await login(b)).body.challenge as string];
      const answers = await Promise.all(
        challenges.flatMap((challenge, i) =>
          Array.from({ length: 5 }, (_, j) =>
            call((i + j) % 2 === 0 ? a : b, 'POST', '/v1/auth/login/verify-totp', {
              body: { challenge, code: wrong() },
            }),
          ),
        ),
      );
      expect(answers.map((r) => r.status)).toEqual(Array(10).fill(401));
      for (const server of [a, b]) {
        const held = await login(server);
        expect(held.status).toBe(429);
        expect(held.body.code).toBe('error.auth.throttled');
        expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(50);
        expect(Number(held.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      }
      // A wrong password is answered as ever, on both.
      expect(
        (await call(b, 'POST', '/v1/auth/login', { body: { address, password: 'not the password' } })).status,
      ).toBe(401);
    });
  },
);
