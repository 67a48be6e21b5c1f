import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parseLockHolder, sha256Hex } from '@strongroom/core';
import { FsBlobStore } from '@strongroom/adapters-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCliProcess } from '@strongroom/tests/spawn';
import { runCli } from '../cli.js';
import { newIdentity } from './age.js';

/**
 * kill -9 of `npm run cli -- backup` while it holds the maintenance lock: the copy it leaves reads
 * as unfinished, the lock names a dead process and is taken over by the next backup and by
 * gc-sweep, and the next backup is whole.
 */
const work = mkdtempSync(join(tmpdir(), 'sr-backup-kill-'));
const dataDir = join(work, 'data');
// Encrypted to a recipient, opened with its identity, both from the environment (filled in below).
const env: Record<string, string> = { SVC_DATA_DIR: dataDir, SVC_BASE_URL: 'http://127.0.0.1:8080' };

describe('kill -9 during a backup', { timeout: 180_000 }, () => {
  beforeAll(async () => {
    expect((await runCli(['init'], env)).code).toBe(0);
    const id = await newIdentity(new Date());
    writeFileSync(join(work, 'identity.txt'), id.identityFile, { mode: 0o600 });
    env.SVC_BACKUP_RECIPIENTS = id.recipient;
    env.SVC_BACKUP_IDENTITY_FILE = join(work, 'identity.txt');
    const store = new FsBlobStore(join(dataDir, 'blobs'));
    const db = new Database(join(dataDir, 'strongroom.db'));
    // Enough blobs (40 MB) that the copy is still running when the kill lands.
    for (let i = 0; i < 200; i++) {
      const bytes = new Uint8Array(200_000).fill(i % 256);
      bytes[0] = i >> 8;
      const hash = sha256Hex(bytes);
      await store.stage(
        `s${i}`,
        (async function* () {
          yield bytes;
        })(),
        bytes.length,
      );
      await store.commit(`s${i}`, hash);
      db.prepare('INSERT INTO blobs (content_hash, size, charged_to, peer, stored_at) VALUES (?, ?, ?, NULL, 1)').run(
        hash,
        bytes.length,
        'someone',
      );
    }
    db.close();
  }, 120_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('leaves an unfinished copy and a stale lock that the next backup and gc-sweep take over', async () => {
    const target = join(work, 'killed');
    const lock = join(dataDir, 'maintenance.lock');
    const { child, ended: closed } = await spawnCliProcess(['backup', target], env);
    const deadline = Date.now() + 120_000;
    while (!existsSync(lock) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGKILL');
    await closed;
    const stale = readFileSync(lock, 'utf8');
    expect(parseLockHolder(stale)).toMatchObject({ what: 'backup', pid: child.pid });
    expect(existsSync(join(target, 'MANIFEST.sha256.age'))).toBe(false);
    expect((await runCli(['verify-backup', target], env)).out).toBe(
      `error: ${join(target, 'MANIFEST.sha256')}: missing: the backup did not finish, or this is not a backup directory`,
    );
    const next = await runCli(['backup', join(work, 'next')], env);
    expect(next.code, next.out).toBe(0);
    expect(next.out).toContain('blobs: 200 referenced by the ledger, 40000000 bytes');
    expect((await runCli(['verify-backup', join(work, 'next')], env)).code).toBe(0);
    expect(existsSync(lock)).toBe(false);
    // Whatever plaintext snapshot the killed one left beside the database went with its lock.
    expect(existsSync(join(dataDir, 'backup-snapshot.tmp'))).toBe(false);
    // The same leftover lock in front of a sweep: taken over too.
    writeFileSync(lock, stale);
    const sweep = await runCli(['gc-sweep'], env);
    expect(sweep.code, sweep.out).toBe(0);
    expect(existsSync(lock)).toBe(false);
  });
});
