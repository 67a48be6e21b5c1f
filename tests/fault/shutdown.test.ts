import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchCall, PASSWORD, VERSION } from '../harness/http.js';
import { openRaw, requestHead } from '../harness/fault/raw-http.js';
import { startServerProcess, type ServerProcess } from '../harness/spawn.js';

/**
 * SIGTERM on the real server: requests in flight finish, new connections are refused, idle
 * kept-alive ones are closed, the SQLite database is closed with its WAL checkpointed away, and the
 * process exits 0 within a bound; a request that never finishes is cut at SVC_SHUTDOWN_GRACE_S.
 */

const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.kill()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function start(env: Record<string, string>, dataDir = mkdtempSync(join(tmpdir(), 'sr-term-'))) {
  if (!dirs.includes(dataDir)) dirs.push(dataDir);
  const server = await startServerProcess({ dataDir, env });
  servers.push(server);
  return { server, dataDir };
}

/** An account with a device and an open 10-byte upload session. */
/** Until the server's handler has taken the upload's first bytes (its state is Uploading), within 10 s. */
async function uploadStarted(url: string, uploadId: string, token: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const state = (await fetchCall(url, 'GET', `/upload/${uploadId}`, { token })).body?.state;
    if (state === 'Uploading') return;
    if (Date.now() > deadline) throw new Error(`the upload never started (state ${String(state)})`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function uploadSession(url: string): Promise<{ token: string; uploadId: string }> {
  const address = `term-${Math.random().toString(36).slice(2, 10)}@example.org`;
  const token = (await fetchCall(url, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } })).body
    .access_token as string;
  const accountId = (await fetchCall(url, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const directory = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  expect((await fetchCall(url, 'PUT', '/v1/devices/directory', { token, cbor: directory })).status).toBeLessThan(300);
  const created = await fetchCall(url, 'POST', '/upload', {
    token,
    body: { declared_size: 10, kind: 'original', device_id: 'phone' },
  });
  expect(created.status).toBe(201);
  return { token, uploadId: created.body.upload_id as string };
}

const putHead = (uploadId: string, token: string) =>
  requestHead('PUT', `/upload/${uploadId}`, {
    authorization: `Bearer ${token}`,
    'x-svc-protocol': VERSION,
    'content-type': 'application/octet-stream',
    'content-length': 10,
  });

const within = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([
    p,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)),
  ]);

describe('SIGTERM', { timeout: 60_000 }, () => {
  it('lets the request in flight finish, refuses new ones, checkpoints SQLite and exits 0', async () => {
    const { server, dataDir } = await start({ SVC_SHUTDOWN_GRACE_S: '10' });
    const { token, uploadId } = await uploadSession(server.url);
    expect(
      statSync(join(dataDir, 'strongroom.db-wal')).size,
      'the writes sit in the WAL before shutdown',
    ).toBeGreaterThan(0);

    // An idle kept-alive connection, and an upload whose body is half sent.
    const idle = await openRaw(server.port);
    idle.write(requestHead('GET', '/.well-known/svc/server-info', {}));
    await within(
      new Promise<void>((r) => {
        const t = setInterval(() => idle.received().includes('\r\n\r\n') && (clearInterval(t), r()), 10);
      }),
      5_000,
      'idle answer',
    );
    const inFlight = await openRaw(server.port);
    inFlight.write(`${putHead(uploadId, token)}01234`);
    await uploadStarted(server.url, uploadId, token);

    const signalled = Date.now();
    server.child.kill('SIGTERM');
    // The idle connection is closed at once; new connections are refused.
    await within(idle.closed, 2_000, 'idle connection closed');
    let refused = false;
    for (let i = 0; i < 40 && !refused; i++) {
      refused = await fetch(`${server.url}/.well-known/svc/server-info`).then(
        () => false,
        () => true,
      );
      if (!refused) await new Promise((r) => setTimeout(r, 50));
    }
    expect(refused, 'a new connection after SIGTERM is refused').toBe(true);
    expect(server.child.exitCode, 'still running while a request is in flight').toBeNull();

    // The rest of the body: the in-flight request completes normally. A request pipelined behind
    // it on the same connection arrives after SIGTERM: turned away, and the connection closed.
    inFlight.write(`56789${requestHead('GET', '/.well-known/svc/server-info', {})}`);
    await within(inFlight.closed, 5_000, 'in-flight request answered');
    const [first, second] = inFlight.received().split(/(?=HTTP\/1\.1 )/);
    expect(first).toMatch(/^HTTP\/1\.1 200 /);
    expect(first).toContain('"state":"WaitingForProcessing"');
    expect(second).toMatch(/^HTTP\/1\.1 503 /);
    expect(second).toMatch(/\r\nconnection: close\r\n/i);
    expect(second).toMatch(/\r\ncontent-type: application\/problem\+json/i);
    expect(second).toContain('"code":"error.server.shutting_down"');

    const exit = await within(server.exited, 5_000, 'exit after SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalled).toBeLessThan(5_000);
    expect(server.events.find((e) => e.event === 'server.stopped')).toMatchObject({ how: 'drained' });
    // Closed cleanly: the WAL was checkpointed into the database file and removed.
    const wal = join(dataDir, 'strongroom.db-wal');
    expect(existsSync(wal) ? statSync(wal).size : 0).toBe(0);

    // And what the in-flight request wrote is there after a restart.
    const again = (await start({}, dataDir)).server;
    expect((await fetchCall(again.url, 'GET', `/upload/${uploadId}`, { token })).body).toMatchObject({
      state: 'WaitingForProcessing',
    });
  });

  it('cuts a request that never finishes at SVC_SHUTDOWN_GRACE_S and still exits 0', async () => {
    const { server, dataDir } = await start({ SVC_SHUTDOWN_GRACE_S: '1' });
    const { token, uploadId } = await uploadSession(server.url);
    const stuck = await openRaw(server.port);
    stuck.write(`${putHead(uploadId, token)}012`);
    await uploadStarted(server.url, uploadId, token);
    const signalled = Date.now();
    server.child.kill('SIGTERM');
    const exit = await within(server.exited, 4_000, 'exit after the grace period');
    expect(exit).toEqual({ code: 0, signal: null });
    const took = Date.now() - signalled;
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(4_000);
    expect(server.events.find((e) => e.event === 'server.stopped')).toMatchObject({ how: 'cut' });
    await within(stuck.closed, 1_000, 'stuck connection closed');
    const wal = join(dataDir, 'strongroom.db-wal');
    expect(existsSync(wal) ? statSync(wal).size : 0).toBe(0);
  });
});
