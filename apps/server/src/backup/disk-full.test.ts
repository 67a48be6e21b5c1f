import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sha256Hex } from '@strongroom/core';
import { FsBlobStore } from '@strongroom/adapters-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { newIdentity } from './age.js';

/**
 * Backup and restore onto a full disk: each fails with one line naming the file it could not
 * write, leaves no manifest (the copy reads as unfinished), releases the maintenance lock, and a
 * restore takes back everything it wrote. The small disk is a 1 MiB tmpfs, which needs root; without
 * it the test is skipped.
 */

const work = mkdtempSync(join(tmpdir(), 'sr-backup-full-'));
const MOUNT = join(work, 'small');
mkdirSync(MOUNT);
let mounted = false;
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', MOUNT], { stdio: 'pipe' });
  mounted = true;
} catch (err) {
  console.warn(
    `backup disk-full.test.ts: SKIPPED: cannot mount a tiny tmpfs (needs root): ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`,
  );
}

const dataDir = join(work, 'data');
const env = { SVC_DATA_DIR: dataDir, SVC_BASE_URL: 'http://127.0.0.1:8080' };
const blobs: string[] = [];
const identityFile = join(work, 'identity.txt');
let recipient = '';

describe.skipIf(!mounted)('backup and restore on a full disk', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    expect((await runCli(['init'], env)).code).toBe(0);
    const id = await newIdentity(new Date());
    writeFileSync(identityFile, id.identityFile, { mode: 0o600 });
    recipient = id.recipient;
    // Three 600 KB blobs in the ledger and the store: more than the small disk holds.
    const store = new FsBlobStore(join(dataDir, 'blobs'));
    const db = new Database(join(dataDir, 'strongroom.db'));
    for (let i = 0; i < 3; i++) {
      const bytes = new Uint8Array(600_000).fill(i + 1);
      const hash = sha256Hex(bytes);
      await store.stage(
        `s${i}`,
        (async function* () {
          yield bytes;
        })(),
        bytes.length,
      );
      expect(await store.commit(`s${i}`, hash)).toBe('stored');
      db.prepare('INSERT INTO blobs (content_hash, size, charged_to, peer, stored_at) VALUES (?, ?, ?, NULL, ?)').run(
        hash,
        bytes.length,
        'someone',
        1,
      );
      blobs.push(hash);
    }
    db.close();
  }, 60_000);
  afterAll(() => {
    try {
      execFileSync('umount', [MOUNT]);
    } catch {
      /* not mounted */
    }
    rmSync(work, { recursive: true, force: true });
  });

  it('backup: one line naming the file, no manifest, the lock released', async () => {
    const target = join(MOUNT, 'backup');
    const r = await runCli(['backup', '--recipient', recipient, target], env);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(new RegExp(`^error: ${target}/blobs/[0-9a-f]{2}/[0-9a-f]{64}: no space left on the device$`));
    expect(existsSync(join(target, 'MANIFEST.sha256.age'))).toBe(false);
    // The plaintext snapshot it encrypted from is gone from the data directory too.
    expect(existsSync(join(dataDir, 'backup-snapshot.tmp'))).toBe(false);
    expect((await runCli(['verify-backup', target], env)).out).toMatch(
      /MANIFEST\.sha256: missing: the backup did not finish/,
    );
    expect(existsSync(join(dataDir, 'maintenance.lock'))).toBe(false);
    rmSync(target, { recursive: true, force: true });
  });

  it('restore: one line naming the file, and the target left as empty as it was', async () => {
    const good = join(work, 'good');
    expect((await runCli(['backup', '--recipient', recipient, good], env)).code).toBe(0);
    const target = join(MOUNT, 'restored');
    mkdirSync(target);
    const r = await runCli(['restore', '--identity-file', identityFile, good], { ...env, SVC_DATA_DIR: target });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(
      new RegExp(`^error: ${target}/blobs/blobs/[0-9a-f]{2}/[0-9a-f]{64}: no space left on the device$`),
    );
    expect(readdirSync(target)).toEqual([]);
  });
});
