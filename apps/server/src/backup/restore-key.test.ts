import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { newIdentity } from './age.js';

/**
 * A restore whose SVC_SECRET_KEY differs from the key its backup was taken with: the restored
 * server would refuse to start (its secrets are sealed under the backup's key, and the environment's
 * key wins over a key file), so the restore refuses first, naming the variable, and writes nothing.
 */
const work = mkdtempSync(join(tmpdir(), 'sr-restore-key-'));
const dataDir = join(work, 'data');
const backup = join(work, 'backup');
const env = { SVC_DATA_DIR: dataDir, SVC_BASE_URL: 'http://127.0.0.1:8080' };
const OTHER_KEY = 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc';
const identityFile = join(work, 'backup-identity.txt');
const opening = ['--identity-file', identityFile];

describe('restore and SVC_SECRET_KEY', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    // The data directory's own secret.key, and a database with a sealed signing key.
    expect((await runCli(['init'], env)).code).toBe(0);
    const { identityFile: text, recipient } = await newIdentity(new Date());
    writeFileSync(identityFile, text, { mode: 0o600 });
    expect((await runCli(['backup', '--recipient', recipient, backup], env)).code).toBe(0);
  }, 60_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("refuses a key that is not the backup's, naming it, and writes nothing", async () => {
    const target = join(work, 'restored-other');
    const r = await runCli(['restore', ...opening, backup], {
      ...env,
      SVC_DATA_DIR: target,
      SVC_SECRET_KEY: OTHER_KEY,
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^error: SVC_SECRET_KEY: is not the key this backup was taken with/);
    expect(existsSync(target) ? readdirSync(target) : []).toEqual([]);
  });

  it("restores with the backup's own key when SVC_SECRET_KEY is unset", async () => {
    const target = join(work, 'restored');
    const r = await runCli(['restore', ...opening, backup], { ...env, SVC_DATA_DIR: target });
    expect(r.code).toBe(0);
    expect(readdirSync(target)).toContain('secret.key');
  });
});
