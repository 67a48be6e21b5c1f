import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchCall, PASSWORD, type Reply } from '../harness/http.js';
import { startServerProcess, type ServerProcess } from '../harness/spawn.js';

/**
 * A full disk under the real server on SQLite: its data dir sits on a tiny tmpfs that the test
 * fills. Writes must fail closed (503 problem+json, nothing half-kept), reads and authenticated
 * requests that need no write go on working, and once space returns the server writes again by
 * itself, without a restart. Mounting needs root (CAP_SYS_ADMIN); without it the test is skipped.
 */

const MOUNT = mkdtempSync(join(tmpdir(), 'sr-full-'));
let mounted = false;
let why = '';
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', MOUNT], { stdio: 'pipe' });
  mounted = true;
} catch (err) {
  why = String((err as { stderr?: Buffer }).stderr ?? err).trim();
  console.warn(`sqlite-full.test.ts: SKIPPED: cannot mount a tiny tmpfs (needs root): ${why}`);
  rmSync(MOUNT, { recursive: true, force: true });
}

const FILLER = join(MOUNT, 'filler');

/** Takes every free byte of the tmpfs. */
function fillDisk(): void {
  const fd = openSync(FILLER, 'a');
  const chunk = Buffer.alloc(16 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
  // Smaller pieces into the last gap.
  const small = openSync(FILLER, 'a');
  try {
    for (;;) writeSync(small, Buffer.alloc(512, 1));
  } catch {
    /* full */
  } finally {
    closeSync(small);
  }
}

describe.skipIf(!mounted)('SQLite on a full disk', { timeout: 90_000 }, () => {
  let server: ServerProcess;
  let token = '';
  let sessionToken = '';
  let acked = 0;
  const acknowledged: string[] = [];

  const problem = (r: Reply, status: number, code: string) => {
    expect(r.status).toBe(status);
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(r.body.code).toBe(code);
  };
  const upload = (size: number) =>
    fetchCall(server.url, 'POST', '/upload', {
      token,
      body: { declared_size: size, kind: 'original', device_id: 'phone' },
    });

  beforeAll(async () => {
    server = await startServerProcess({ dataDir: join(MOUNT, 'data'), env: { SVC_QUOTA_HARD_BYTES: '' } });
    const address = `full-${Math.random().toString(36).slice(2, 10)}@example.org`;
    const pair = (await fetchCall(server.url, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } }))
      .body;
    token = pair.access_token;
    sessionToken = pair.session_token;
    const accountId = (await fetchCall(server.url, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
    const directory = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
    expect(
      (await fetchCall(server.url, 'PUT', '/v1/devices/directory', { token, cbor: directory })).status,
    ).toBeLessThan(300);
  }, 60_000);
  afterAll(async () => {
    await server?.kill();
    if (mounted) execFileSync('umount', ['-l', MOUNT]);
    rmSync(MOUNT, { recursive: true, force: true });
  });

  it('refuses writes with 503 problem+json, keeps serving reads, and recovers when space returns', async () => {
    expect((await upload(7)).status).toBe(201);
    acked += 7;
    fillDisk();
    // The WAL may still have room for a few writes; keep writing until the disk says no.
    let refused: Reply | null = null;
    for (let i = 0; i < 3000 && refused === null; i++) {
      const r = await upload(7);
      if (r.status === 201) {
        acked += 7;
        acknowledged.push(r.body.upload_id);
      } else refused = r;
    }
    expect(refused, 'a write was refused once the disk filled').not.toBeNull();
    console.info(`sqlite-full: ${acknowledged.length} writes still fitted in the WAL after the disk filled`);
    problem(refused!, 503, 'error.store.unavailable');

    // Every kind of write fails closed, the same way, again and again.
    problem(await upload(7), 503, 'error.store.unavailable');
    problem(
      await fetchCall(server.url, 'POST', '/v1/auth/register', {
        body: { address: 'late@example.org', password: PASSWORD },
      }),
      503,
      'error.store.unavailable',
    );
    problem(
      await fetchCall(server.url, 'POST', '/v1/auth/refresh', { body: { session_token: sessionToken } }),
      503,
      'error.auth.unavailable',
    );

    // Reads, and authenticated requests that write nothing, still work.
    const quota = await fetchCall(server.url, 'GET', '/quota', { token });
    expect(quota.status).toBe(200);
    expect(quota.body.reserved).toBe(acked);
    expect((await fetchCall(server.url, 'GET', '/v1/auth/profile', { token })).status).toBe(200);
    expect((await fetchCall(server.url, 'GET', '/v1/auth/sessions', { token })).status).toBe(200);
    expect((await fetchCall(server.url, 'GET', '/v1/devices/directory', { token })).status).toBe(200);
    for (const id of acknowledged.slice(-3))
      expect((await fetchCall(server.url, 'GET', `/upload/${id}`, { token })).status).toBe(200);
    expect((await fetchCall(server.url, 'GET', '/.well-known/svc/server-info')).status).toBe(200);
    expect(server.child.exitCode).toBeNull();

    // Space returns: the very next writes succeed, no restart.
    unlinkSync(FILLER);
    for (let i = 0; i < 5; i++) {
      const r = await upload(11);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      acked += 11;
    }
    expect(
      (await fetchCall(server.url, 'POST', '/v1/auth/refresh', { body: { session_token: sessionToken } })).status,
    ).toBe(200);
    // Nothing refused was half-kept: the reservations are exactly the acknowledged ones.
    expect((await fetchCall(server.url, 'GET', '/quota', { token })).body.reserved).toBe(acked);
    expect(server.child.exitCode).toBeNull();
  });
});
