import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codeForStep, stepAt, THROTTLE_FREE_WRONG_CODES } from '@strongroom/core';
import { totpSecretBytes } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { startServerProcess, type ServerProcess } from '../harness/spawn.js';
import { fetchCall, PASSWORD, type Reply } from '../harness/http.js';

/**
 * The per-account second-factor bound (spec §5.6) across processes: wrong codes sent together to two server processes
 * over one PostgreSQL database, on sign-in, disable and verify-enrollment, never get more than the
 * per-account bound compared. Each check is claimed under a row lock before its code is compared.
 */

const PG_URL = pgUrlFromEnv();
if (!PG_URL)
  console.warn(
    'second-factor-multiprocess.test.ts: SKIPPED: PG_URL is not set (two processes need a PostgreSQL server).',
  );

describe.skipIf(!PG_URL)('second-factor bound over two processes on PostgreSQL', { timeout: 120_000 }, () => {
  let db: ScratchDatabase;
  let dataDir: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    db = await createScratchDatabase(PG_URL!, 'factor');
    dataDir = mkdtempSync(join(tmpdir(), 'sr-factor-'));
    // The first migrates; the second starts over the migrated database.
    servers.push(await startServerProcess({ dataDir, env: { SVC_DATABASE_URL: db.url } }));
    servers.push(await startServerProcess({ dataDir, env: { SVC_DATABASE_URL: db.url } }));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await db?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const codeNow = (secret: Uint8Array, d = 0) => codeForStep(secret, stepAt(Date.now()) + d);
  const wrongCode = (secret: Uint8Array) => {
    const near = new Set([-2, -1, 0, 1, 2].map((d) => codeNow(secret, d)));
    return ['000000', '111111', '222222', '333333'].find((c) => !near.has(c))!;
  };
  const compared = (r: Reply) => r.body?.code === 'error.auth.invalid_code';
  const throttled = (r: Reply) =>
    r.status === 429 && r.body?.code === 'error.auth.throttled' && Number(r.headers.get('retry-after')) > 0;

  it('concurrent wrong codes on verify-totp, disable and verify-enrollment, split over both processes: at most the bound compared', async () => {
    const [a, b] = servers.map((s) => s.url) as [string, string];
    const address = `factor-${Date.now().toString(36)}@example.org`;
    const reg = await fetchCall(a, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
    expect(reg.status).toBe(200);
    const token = reg.body.access_token as string;
    const secret = totpSecretBytes((await fetchCall(b, 'POST', '/v1/auth/totp/enroll', { token })).body.secret);
    // Four wrong verify-enrollment codes at once on both processes, then the right one confirms.
    const early = await Promise.all(
      [a, b, a, b].map((url) =>
        fetchCall(url, 'POST', '/v1/auth/totp/verify-enrollment', { token, body: { code: wrongCode(secret) } }),
      ),
    );
    expect(early.filter(compared)).toHaveLength(4);
    expect(
      (await fetchCall(a, 'POST', '/v1/auth/totp/verify-enrollment', { token, body: { code: codeNow(secret) } }))
        .status,
    ).toBe(204);
    const challenges: string[] = [];
    for (let i = 0; i < 6; i++) {
      const c = await fetchCall(i % 2 ? a : b, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } });
      expect(c.status).toBe(202);
      challenges.push(c.body.challenge);
    }
    let i = 0;
    const at = () => (i++ % 2 ? a : b);
    const replies = await Promise.all([
      ...challenges.flatMap((challenge) =>
        Array.from({ length: 4 }, () =>
          fetchCall(at(), 'POST', '/v1/auth/login/verify-totp', { body: { challenge, code: wrongCode(secret) } }),
        ),
      ),
      ...Array.from({ length: 16 }, () =>
        fetchCall(at(), 'POST', '/v1/auth/totp/disable', { token, body: { code: wrongCode(secret) } }),
      ),
    ]);
    expect(early.length + replies.filter(compared).length).toBeLessThanOrEqual(THROTTLE_FREE_WRONG_CODES);
    for (const r of replies) expect(compared(r) || throttled(r)).toBe(true);
    // Held on both processes, whatever the route: the right code is not compared.
    for (const url of [a, b])
      expect(
        throttled(await fetchCall(url, 'POST', '/v1/auth/totp/disable', { token, body: { code: codeNow(secret) } })),
      ).toBe(true);
    expect(throttled(await fetchCall(b, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } }))).toBe(
      true,
    );
  });
});
