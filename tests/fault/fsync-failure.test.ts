import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fetchCall, PASSWORD, type Reply } from '../harness/http.js';
import { startServerProcess, type ServerProcess } from '../harness/spawn.js';

/**
 * A failed WAL fsync (spec §17.7) under the SQLite group commit. The process cannot know
 * what reached the disk, so no write of the failed group is acknowledged, /readyz answers 503, and
 * the process exits non-zero for a supervisor to restart it; after the restart every write that
 * was acknowledged is there (SQLite recovers from its log).
 */

const dir = mkdtempSync(join(tmpdir(), 'sr-fsync-'));
const dataDir = join(dir, 'data');
const flag = join(dir, 'fail-fsync');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a failed fsync on SQLite', { timeout: 120_000 }, () => {
  it('acknowledges nothing of the failed group, answers 503 on /readyz, exits non-zero; a restart keeps every acknowledged write', async () => {
    const env = { SR_FAULT_FSYNC_FLAG: flag };
    const nodeArgs = ['--import', './tests/harness/fault/failing-fsync.ts'];
    let server: ServerProcess = await startServerProcess({ dataDir, env, nodeArgs });
    const address = 'fsync@example.org';
    expect(
      (await fetchCall(server.url, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } })).status,
    ).toBe(200);
    // Acknowledged sign-ins: each opened a session through the group commit.
    const acknowledged: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await fetchCall(server.url, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } });
      expect(r.status).toBe(200);
      acknowledged.push(r.body.session_token);
    }
    // The disk starts failing its fsyncs.
    writeFileSync(flag, '');
    const during: (Reply | Error)[] = await Promise.all(
      Array.from({ length: 6 }, () =>
        fetchCall(server.url, 'POST', '/v1/auth/refresh', { body: { session_token: acknowledged[0] } }).catch(
          (e: Error) => e,
        ),
      ),
    );
    // Not one of them was acknowledged.
    for (const r of during) if (!(r instanceof Error)) expect(r.status).toBe(503);
    // A probe on a fresh connection still gets an answer: 503 until the process is gone.
    const ready = await fetch(`${server.url}/readyz`, { headers: { connection: 'close' } })
      .then((r) => ({ status: r.status }))
      .catch((e: Error) => e);
    if (!(ready instanceof Error)) expect(ready.status).toBe(503);
    // And no later write either, on any path, until the process is gone.
    const later = await fetchCall(server.url, 'POST', '/v1/auth/login', {
      body: { address, password: PASSWORD },
    }).catch((e: Error) => e);
    if (!(later instanceof Error)) expect(later.status).toBe(503);
    expect(ready).not.toBeInstanceOf(Error);
    const exit = await Promise.race([
      server.exited,
      new Promise<'still running'>((r) => setTimeout(() => r('still running'), 15_000)),
    ]);
    expect(exit).not.toBe('still running');
    expect(exit === 'still running' ? null : exit.code).not.toBe(0);
    if (exit === 'still running') await server.kill();

    // The supervisor restarts it, with a healthy disk.
    rmSync(flag, { force: true });
    server = await startServerProcess({ dataDir, env, nodeArgs });
    try {
      expect((await fetchCall(server.url, 'GET', '/readyz', { version: null })).status).toBe(200);
      for (const token of acknowledged)
        expect(
          (await fetchCall(server.url, 'POST', '/v1/auth/refresh', { body: { session_token: token } })).status,
        ).toBe(200);
    } finally {
      await server.stop();
    }
  });
});
