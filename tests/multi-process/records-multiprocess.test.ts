import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { decodeProtectedHeader, importJWK, jwtVerify, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from '@strongroom/adapters-pg/testing';
import { fetchCall, type CallOptions, type Reply } from '../harness/http.js';
import { runCliProcess, startServer as startProcess, type ServerProcess } from '../harness/spawn.js';

/**
 * Deprecation announcements and attestation rotations made through one process, honoured by
 * another over the same PostgreSQL database, with no restart. Needs PG_URL (PGlite is in-process).
 */

const PG_URL = pgUrlFromEnv();
const BASE_URL = 'http://127.0.0.1:8080';
const NOTICE_S = 2;
const OLD = '2026-05-01';
const NEW_MIN = '2026-06-01';
const SHARED_ENV = {
  SVC_SECRET_KEY: randomBytes(32).toString('base64url'),
  SVC_DEPRECATION_NOTICE_S: String(NOTICE_S),
  SVC_BASE_URL: BASE_URL,
};
const DATA_DIR = mkdtempSync(join(tmpdir(), 'sr-records-'));

if (!PG_URL)
  console.warn(
    'records-multiprocess.test.ts: SKIPPED: PG_URL is not set (several processes need a PostgreSQL server).',
  );

type Server = ServerProcess;

const startServer = (databaseUrl: string): Promise<Server> =>
  startProcess({ env: { ...SHARED_ENV, SVC_DATA_DIR: DATA_DIR, SVC_DATABASE_URL: databaseUrl } });

const cli = (databaseUrl: string, ...args: string[]) =>
  runCliProcess(args, { ...SHARED_ENV, SVC_DATA_DIR: DATA_DIR, SVC_DATABASE_URL: databaseUrl });

const call = (server: Server, method: string, path: string, o: CallOptions = {}): Promise<Reply> =>
  fetchCall(server.url, method, path, o);
const sleepUntil = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms - Date.now())));
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

async function user(server: Server) {
  const address = `rec-${Math.random().toString(36).slice(2, 10)}@example.org`;
  const r = await call(server, 'POST', '/v1/auth/register', {
    body: { address, password: 'correct horse battery staple' },
  });
  expect(r.status).toBe(200);
  const token = r.body.access_token as string;
  const accountId = (await call(server, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  expect((await call(server, 'PUT', '/v1/devices/directory', { token, cbor: dir })).status).toBeLessThan(300);
  return { token, accountId };
}

async function upload(server: Server, token: string, data: Uint8Array): Promise<string> {
  const o = await call(server, 'POST', '/upload', {
    token,
    body: { device_id: 'phone', kind: 'original', declared_size: data.length },
  });
  expect(o.status).toBe(201);
  expect(
    (
      await call(server, 'PUT', `/upload/${o.body.upload_id}`, {
        token,
        raw: data as unknown as BodyInit,
        contentType: 'application/octet-stream',
      })
    ).status,
  ).toBe(200);
  const f = await call(server, 'POST', `/upload/${o.body.upload_id}/finalize`, {
    token,
    body: { content_hash: sha(data) },
  });
  expect(f.status).toBe(200);
  return f.body.receipt as string;
}

describe.skipIf(!PG_URL)('deprecations and attestation keys across two processes (PG_URL)', { timeout: 90_000 }, () => {
  let db: ScratchDatabase;
  let a: Server;
  let b: Server;

  beforeAll(async () => {
    db = await createScratchDatabase(PG_URL!, 'records');
    // Started together on an empty database: exactly one attestation history entry 1 results.
    [a, b] = await Promise.all([startServer(db.url), startServer(db.url)]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([a, b].filter(Boolean).map((s) => s.stop()));
    await db?.drop();
    rmSync(DATA_DIR, { recursive: true, force: true });
  }, 30_000);

  it('an announcement made through another process (the operator CLI) is enforced by both servers from its effective instant, with no restart', async () => {
    const u = await user(b);
    // B has served with its announcement list cached from before the announcement.
    expect(
      (await call(b, 'PATCH', '/v1/auth/profile', { token: u.token, version: OLD, body: { display_name: 'before' } }))
        .status,
    ).toBe(200);
    // Far enough ahead for a CLI process to start on a busy machine (about a second when idle).
    const effectiveAt = Date.now() + 12_000;
    const announced = await cli(db.url, 'deprecate', NEW_MIN, new Date(effectiveAt).toISOString());
    expect(announced, announced.out).toMatchObject({ code: 0 });

    // Until the instant B still admits the old client's writes, and soon tells it when they end.
    await sleepUntil(Date.now() + 1_500);
    expect(Date.now()).toBeLessThan(effectiveAt - 1_000);
    const warned = await call(b, 'PATCH', '/v1/auth/profile', {
      token: u.token,
      version: OLD,
      body: { display_name: 'warned' },
    });
    expect(warned.status).toBe(200);
    expect(warned.headers.get('sunset')).toBe(new Date(effectiveAt).toUTCString());
    expect(warned.headers.get('x-svc-protocol-min')).toBe('2026-03-01');
    expect((await call(b, 'GET', '/.well-known/svc/server-info', { version: null })).body.min_protocol_version).toEqual(
      [{ min_protocol_version: NEW_MIN, effective_at: new Date(effectiveAt).toISOString() }],
    );
    // Too soon is refused with the reason, through the same command.
    const tooSoon = await cli(db.url, 'deprecate', '2026-07-01', new Date(Date.now() + 500).toISOString());
    expect(tooSoon.code).toBe(1);
    expect(tooSoon.out).toMatch(/error.deprecation.too_soon: effective_at must be at least the notice period \(2 s\)/);

    await sleepUntil(effectiveAt + 50);
    for (const s of [b, a]) {
      const refused = await call(s, 'PATCH', '/v1/auth/profile', {
        token: u.token,
        version: OLD,
        body: { display_name: 'after' },
      });
      expect(refused).toMatchObject({
        status: 426,
        body: { code: 'error.protocol.below_min', supported_min: NEW_MIN },
      });
      expect(refused.headers.get('x-svc-protocol-min')).toBe(NEW_MIN);
      const read = await call(s, 'GET', '/v1/auth/profile', { token: u.token, version: OLD });
      expect(read).toMatchObject({ status: 200, body: { display_name: 'warned' } });
    }
  });

  it('an attestation key rotated through another process (the operator CLI) is served by both, and receipts from before it still verify', async () => {
    const u = await user(a);
    const before = await upload(a, u.token, new Uint8Array(40).fill(1));
    const initial = (await call(b, 'GET', '/.well-known/svc/attestation-keys', { version: null })).body;
    expect(initial.history).toHaveLength(1);
    const rotated = await cli(db.url, 'rotate-attestation-key');
    expect(rotated, rotated.out).toMatchObject({ code: 0 });
    const onA = (await call(a, 'GET', '/.well-known/svc/attestation-keys', { version: null })).body;
    const onB = (await call(b, 'GET', '/.well-known/svc/attestation-keys', { version: null })).body;
    expect(onA).toEqual(onB);
    expect(onB.history.map((e: { seq: number }) => e.seq)).toEqual([1, 2]);
    expect(onB.history[1].prev).toBe(onB.history[0].hash);
    expect(onB.keys.map((k: JWK) => k.kid)).toEqual([onB.history[1].kid]);
    expect(onB.history[0].retired_at).not.toBeNull();
    const after = await upload(b, u.token, new Uint8Array(40).fill(2));
    for (const receipt of [before, after]) {
      const { kid } = decodeProtectedHeader(receipt);
      const jwk = onB.history.find((e: { kid: string }) => e.kid === kid).jwk;
      const { payload } = await jwtVerify(receipt, await importJWK(jwk, 'EdDSA'), {
        typ: 'svc-receipt+jwt',
        issuer: BASE_URL,
      });
      expect(payload).toMatchObject({ sub: u.accountId, charged_to: u.accountId, size: 40 });
    }
  });
});
