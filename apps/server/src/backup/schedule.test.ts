import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { backupName, formatLockHolder } from '@strongroom/core';
import { FakeClock, MemoryLogger } from '@strongroom/core/testing';
import { takeFileLock } from '@strongroom/adapters-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, sealingFrom } from '../cli.js';
import { readConfig } from '../config.js';
import { HttpMetrics } from '../http/metrics.js';
import { BackupScheduler, checkBackupDir, runScheduledBackup } from './schedule.js';
import { newIdentity } from './age.js';

const HOUR = 3_600_000;
const work = mkdtempSync(join(tmpdir(), 'sr-backup-schedule-'));
const dataDir = join(work, 'data');
const dir = join(work, 'backups');
// Scheduled backups are encrypted to a recipient; verify-backup opens them with its identity.
const identity = await newIdentity(new Date());
mkdirSync(join(work, 'keys'));
writeFileSync(join(work, 'keys', 'identity.txt'), identity.identityFile, { mode: 0o600 });
const env = {
  SVC_DATA_DIR: dataDir,
  SVC_BASE_URL: 'http://127.0.0.1:8080',
  SVC_BACKUP_DIR: dir,
  SVC_BACKUP_INTERVAL_S: '3600',
  SVC_BACKUP_KEEP: '2',
  SVC_BACKUP_RECIPIENTS: identity.recipient,
  SVC_BACKUP_IDENTITY_FILE: join(work, 'keys', 'identity.txt'),
};
const config = readConfig(env);
const sealing = await sealingFrom(config);

/** A pid that belonged to a process now gone (what a kill -9 leaves in a lock file). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(r.stdout.toString());
}

afterAll(() => rmSync(work, { recursive: true, force: true }));

const backups = () =>
  readdirSync(dir)
    .filter((n) => n.startsWith('strongroom-'))
    .sort();

describe('scheduled backups', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    // Any command through the stores creates the database, its deployment record and the key file.
    expect((await runCli(['init'], env)).code).toBe(0);
  }, 60_000);

  it('takes one when due, keeps the newest SVC_BACKUP_KEEP, skips while the newest is fresh', async () => {
    const t0 = Date.UTC(2026, 10, 26, 3, 0, 0);
    expect(await runScheduledBackup(config, () => t0, sealing)).toMatchObject({
      outcome: 'taken',
      name: backupName(t0),
      pruned: [],
    });
    expect(await runScheduledBackup(config, () => t0 + HOUR - 1, sealing)).toEqual({
      outcome: 'skipped',
      reason: 'the newest backup is fresh',
    });
    expect(await runScheduledBackup(config, () => t0 + HOUR, sealing)).toMatchObject({ outcome: 'taken', pruned: [] });
    const third = await runScheduledBackup(config, () => t0 + 2 * HOUR, sealing);
    expect(third).toMatchObject({ outcome: 'taken', pruned: [backupName(t0)] });
    expect(backups()).toEqual([backupName(t0 + HOUR), backupName(t0 + 2 * HOUR)]);
    // Each kept one is a whole backup, encrypted.
    for (const name of backups())
      expect(readdirSync(join(dir, name)).sort()).toEqual([
        'MANIFEST.sha256.age',
        'backup.json',
        'secret.key.age',
        'strongroom.db.age',
      ]);
    for (const name of backups()) expect((await runCli(['verify-backup', join(dir, name)], env)).code).toBe(0);
  });

  it("after a kill -9 mid-run: the dead run's partial copy and both stale locks are cleared, and the next run succeeds", async () => {
    const t = Date.UTC(2026, 10, 27, 3, 0, 0);
    const partial = join(dir, `.partial-${backupName(t - 1000)}`);
    mkdirSync(join(partial, 'blobs'), { recursive: true });
    writeFileSync(join(partial, 'strongroom.db'), 'half');
    const dead = formatLockHolder({ what: 'scheduled backup', pid: deadPid(), host: hostname(), since: t - 1000 });
    writeFileSync(join(dir, '.lock'), dead);
    writeFileSync(join(dataDir, 'maintenance.lock'), dead.replace('scheduled backup', 'backup'));
    // What the killed run left is recognisably unfinished.
    expect((await runCli(['verify-backup', partial], env)).out).toBe(
      `error: ${join(partial, 'MANIFEST.sha256')}: missing: the backup did not finish, or this is not a backup directory`,
    );
    expect(await runScheduledBackup(config, () => t, sealing)).toMatchObject({ outcome: 'taken', name: backupName(t) });
    expect(existsSync(partial)).toBe(false);
    expect(existsSync(join(dir, '.lock'))).toBe(false);
    expect(existsSync(join(dataDir, 'maintenance.lock'))).toBe(false);
  });

  it('several processes on one schedule: while one holds the lock the others skip', async () => {
    const lock = await takeFileLock(join(dir, '.lock'), 'scheduled backup', Date.now());
    try {
      const r = await runScheduledBackup(config, () => Date.UTC(2027, 0, 1), sealing);
      expect(r.outcome).toBe('skipped');
      expect(r.outcome === 'skipped' && r.reason).toMatch(
        new RegExp(`^a scheduled backup is running \\(pid ${process.pid} on `),
      );
    } finally {
      await lock.release();
    }
    // A lock held on another host is never presumed dead.
    writeFileSync(
      join(dir, '.lock'),
      formatLockHolder({ what: 'scheduled backup', pid: deadPid(), host: 'elsewhere', since: 0 }),
    );
    expect((await runScheduledBackup(config, () => Date.UTC(2027, 0, 1), sealing)).outcome).toBe('skipped');
    rmSync(join(dir, '.lock'));
  });

  it("exports the newest backup's age and time on /metrics", async () => {
    const clock = new FakeClock();
    const names = backups();
    const newest = names[names.length - 1]!;
    const at = Date.UTC(2026, 10, 27, 3, 0, 0);
    expect(newest).toBe(backupName(at));
    clock.set(at + 90_000);
    const metrics = new HttpMetrics();
    new BackupScheduler({ schedule: config.backup!, clock, logger: new MemoryLogger(), metrics });
    const text = await metrics.render();
    expect(text).toMatch(/^strongroom_backup_newest_age_seconds 90$/m);
    expect(text).toMatch(new RegExp(`^strongroom_backup_newest_timestamp_seconds ${at / 1000}$`, 'm'));
    expect(text).toMatch(/^strongroom_backup_failures_total 0$/m);
  });

  it('refuses a backup dir inside the data dir at start, and half a schedule', async () => {
    expect(await checkBackupDir(readConfig({ ...env, SVC_BACKUP_DIR: join(dataDir, 'backups') }))).toMatch(
      /is inside SVC_DATA_DIR/,
    );
    expect(await checkBackupDir(config)).toBeNull();
    // A passphrase file the schedule could not read is named at start, not at the first run.
    const viaPassphrase = {
      ...env,
      SVC_BACKUP_RECIPIENTS: '',
      SVC_BACKUP_PASSPHRASE_FILE: join(work, 'keys', 'no-such-file'),
    };
    expect(await checkBackupDir(readConfig(viaPassphrase))).toBe(
      `SVC_BACKUP_PASSPHRASE_FILE: ${join(work, 'keys', 'no-such-file')}: missing`,
    );
    writeFileSync(join(work, 'keys', 'empty-passphrase'), '\n');
    expect(
      await checkBackupDir(
        readConfig({ ...viaPassphrase, SVC_BACKUP_PASSPHRASE_FILE: join(work, 'keys', 'empty-passphrase') }),
      ),
    ).toMatch(/holds no passphrase on its first line/);
    expect(() => readConfig({ ...env, SVC_BACKUP_INTERVAL_S: '' })).toThrow(
      /SVC_BACKUP_DIR needs SVC_BACKUP_INTERVAL_S/,
    );
    expect(() => readConfig({ ...env, SVC_BACKUP_DIR: '' })).toThrow(/SVC_BACKUP_INTERVAL_S needs SVC_BACKUP_DIR/);
    expect(() => readConfig({ ...env, SVC_BACKUP_KEEP: '0' })).toThrow(/SVC_BACKUP_KEEP must be a whole number from 1/);
  });
});

describe('a key from SVC_SECRET_KEY, and an interrupted restore', { timeout: 60_000 }, () => {
  const keyDir = join(work, 'env-key');
  const key = Buffer.alloc(32, 5).toString('base64url');
  const envKey = { SVC_DATA_DIR: keyDir, SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_SECRET_KEY: key };

  it('is not written into the backup, even encrypted; verify and restore then need SVC_SECRET_KEY, and refuse another', async () => {
    expect((await runCli(['init'], envKey)).code).toBe(0);
    const b = join(work, 'env-key-backup');
    const r = await runCli(['backup', '--recipient', identity.recipient, b], envKey);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('secret key: NOT in the backup (it comes from SVC_SECRET_KEY)');
    expect(readdirSync(b).sort()).toEqual(['MANIFEST.sha256.age', 'backup.json', 'strongroom.db.age']);
    const without = {
      SVC_DATA_DIR: join(work, 'env-key-restored'),
      SVC_BASE_URL: 'http://127.0.0.1:8080',
      SVC_BACKUP_IDENTITY_FILE: env.SVC_BACKUP_IDENTITY_FILE,
    };
    expect((await runCli(['verify-backup', b], without)).out).toBe(
      `error: ${join(b, 'secret.key.age')}: is not in this backup (the server key came from SVC_SECRET_KEY): give --key-file <the data directory's secret.key>, or set SVC_SECRET_KEY to the key`,
    );
    const wrong = { ...without, SVC_SECRET_KEY: Buffer.alloc(32, 6).toString('base64url') };
    expect((await runCli(['restore', b], wrong)).out).toMatch(
      /^error: SVC_SECRET_KEY: is not the key this backup was taken with/,
    );
    expect(existsSync(without.SVC_DATA_DIR)).toBe(false);
    expect((await runCli(['restore', b], { ...without, SVC_SECRET_KEY: key })).code).toBe(0);
  });

  it('a data dir holding the marker of an unfinished restore is refused at start, naming it', async () => {
    const half = join(work, 'half-restored');
    mkdirSync(half);
    writeFileSync(join(half, 'restore.incomplete'), 'restoring /somewhere\n');
    // One line naming the marker, exit 1: never a stack trace.
    const r = await runCli(['rotate-key'], { SVC_DATA_DIR: half, SVC_BASE_URL: 'http://127.0.0.1:8080' });
    expect(r.code).toBe(1);
    expect(r.out.split('\n')).toHaveLength(1);
    expect(r.out).toContain(`${join(half, 'restore.incomplete')}: a restore into SVC_DATA_DIR did not finish`);
    expect(existsSync(join(half, 'strongroom.db'))).toBe(false);
  });
});
