import { spawn } from 'node:child_process';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  backupDue,
  backupName,
  backupsToPrune,
  describeBackupProblem,
  finishedBackups,
  newestBackupAgeSeconds,
  type Clock,
  type Logger,
} from '@strongroom/core';
import { LockHeldError, takeFileLock } from '@strongroom/adapters-node';
import type { BackupSchedule, Config } from '../config.js';
import type { HttpMetrics } from '../http/metrics.js';
import { BackupFailure, realish, syncDir, within } from './files.js';
import { takeBackup } from './take.js';
import { readPassphraseFile, type BackupSealing } from './age.js';

const PARTIAL = '.partial-';
const LOCK = '.lock';

/** The outcome of one scheduled run, as the child prints it (one JSON line). */
export type ScheduledOutcome =
  | { outcome: 'taken'; name: string; blobs: number; blob_bytes: number; pruned: string[] }
  | { outcome: 'skipped'; reason: string };

/**
 * One scheduled run, in the process `backup-scheduled` starts: under the backup directory's lock
 * (several processes share one schedule: whoever holds the lock takes the backup, the others skip,
 * and anyone who finds the newest backup fresh skips too), unfinished runs of killed processes are
 * removed, the backup is written under `.partial-<name>` and renamed to `<name>` only when whole,
 * then all but the newest `keep` are deleted.
 */
export async function runScheduledBackup(
  config: Config,
  now: () => number,
  sealing: BackupSealing,
): Promise<ScheduledOutcome> {
  const schedule = config.backup;
  if (schedule === null) throw new BackupFailure({ file: 'SVC_BACKUP_DIR', cause: 'is not set' });
  await mkdir(schedule.dir, { recursive: true, mode: 0o700 });
  let lock;
  try {
    lock = await takeFileLock(join(schedule.dir, LOCK), 'scheduled backup', now());
  } catch (err) {
    if (err instanceof LockHeldError) return { outcome: 'skipped', reason: err.message };
    throw err;
  }
  try {
    const names = await readdir(schedule.dir);
    if (!backupDue(names, now(), schedule.intervalMs))
      return { outcome: 'skipped', reason: 'the newest backup is fresh' };
    // Ours to clear: only a lock holder writes partials, and we hold it.
    for (const n of names.filter((n) => n.startsWith(PARTIAL)))
      await rm(join(schedule.dir, n), { recursive: true, force: true });
    const name = backupName(now());
    const partial = join(schedule.dir, PARTIAL + name);
    let report;
    try {
      report = await takeBackup(config, partial, { now, sealing });
    } catch (err) {
      await rm(partial, { recursive: true, force: true });
      throw err;
    }
    await rename(partial, join(schedule.dir, name));
    await syncDir(schedule.dir);
    const pruned = backupsToPrune([...names, name], schedule.keep);
    for (const old of pruned) await rm(join(schedule.dir, old), { recursive: true, force: true });
    return { outcome: 'taken', name, blobs: report.info.blobs, blob_bytes: report.info.blob_bytes, pruned };
  } finally {
    await lock.release();
  }
}

/**
 * Refuses at start a backup directory inside the data directory (or containing it), and a
 * schedule whose passphrase file cannot be read: found at start, not at the first run.
 */
export async function checkBackupDir(config: Config): Promise<string | null> {
  if (config.backup === null) return null;
  const passphraseFile = config.backupEncryption.passphraseFile;
  if (passphraseFile !== null) {
    try {
      await readPassphraseFile(passphraseFile, 'SVC_BACKUP_PASSPHRASE_FILE');
    } catch (err) {
      return `SVC_BACKUP_PASSPHRASE_FILE: ${err instanceof BackupFailure ? describeBackupProblem(err.problem) : String(err)}`;
    }
  }
  const [dir, data] = [await realish(config.backup.dir), await realish(config.dataDir)];
  if (within(dir, data))
    return `SVC_BACKUP_DIR (${config.backup.dir}) is inside SVC_DATA_DIR; put backups elsewhere, ideally on another disk`;
  if (within(data, dir)) return `SVC_BACKUP_DIR (${config.backup.dir}) contains SVC_DATA_DIR`;
  return null;
}

/**
 * The server's side of the schedule: every so often it looks whether a backup is due and, if so,
 * starts `cli.ts backup-scheduled` in a process of its own (the snapshot and the blob copy never
 * hold up this process's event loop, and a backup that dies takes nothing else with it). It logs
 * each outcome, and exports on /metrics the age and time of the newest finished backup in the
 * directory (whichever process took it) and this process's failed runs, for an alert when backups
 * stop.
 */
export class BackupScheduler {
  #timer: NodeJS.Timeout | null = null;
  #running = false;
  #failures = 0;
  // The CLI beside the running code: src/cli.ts under tsx, dist/cli.js in the compiled server
  // (where this module is bundled into dist/ and Node runs no TypeScript).
  readonly #cli = fileURLToPath(
    import.meta.url.endsWith('.ts') ? new URL('../cli.ts', import.meta.url) : new URL('./cli.js', import.meta.url),
  );

  constructor(private readonly d: { schedule: BackupSchedule; clock: Clock; logger: Logger; metrics: HttpMetrics }) {
    const names = () => {
      try {
        return readdirSync(d.schedule.dir);
      } catch {
        return [];
      }
    };
    d.metrics.watch(
      'strongroom_backup_newest_age_seconds',
      'Seconds since the newest finished backup in SVC_BACKUP_DIR (absent when there is none).',
      'gauge',
      () => {
        const age = newestBackupAgeSeconds(names(), d.clock.now());
        return age === null ? [] : [{ labels: {}, value: age }];
      },
    );
    d.metrics.watch(
      'strongroom_backup_newest_timestamp_seconds',
      'When the newest finished backup in SVC_BACKUP_DIR was taken (0 when there is none).',
      'gauge',
      () => {
        const newest = finishedBackups(names())[0];
        return [{ labels: {}, value: newest ? newest.at / 1000 : 0 }];
      },
    );
    d.metrics.watch(
      'strongroom_backup_failures_total',
      'Scheduled backup runs of this process that failed.',
      'counter',
      () => [{ labels: {}, value: this.#failures }],
    );
  }

  start(): void {
    // Looked at often enough that a due backup starts within a tenth of the interval (at most a minute).
    const every = Math.max(1_000, Math.min(60_000, Math.floor(this.d.schedule.intervalMs / 10)));
    void this.tick();
    this.#timer = setInterval(() => void this.tick(), every);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  async tick(): Promise<void> {
    if (this.#running) return;
    let names: string[];
    try {
      names = await readdir(this.d.schedule.dir);
    } catch {
      names = [];
    }
    if (!backupDue(names, this.d.clock.now(), this.d.schedule.intervalMs)) return;
    this.#running = true;
    const started = this.d.clock.now();
    try {
      const { code, out } = await this.#child();
      const last = out.trim().split('\n').pop() ?? '';
      let parsed: ScheduledOutcome | null = null;
      try {
        parsed = JSON.parse(last) as ScheduledOutcome;
      } catch {
        parsed = null;
      }
      if (code === 0 && parsed?.outcome === 'taken') {
        this.d.logger.info('backup.taken', {
          dir: this.d.schedule.dir,
          name: parsed.name,
          blobs: parsed.blobs,
          blob_bytes: parsed.blob_bytes,
          pruned: parsed.pruned.length,
          ms: this.d.clock.now() - started,
        });
      } else if (code === 0 && parsed?.outcome === 'skipped') {
        this.d.logger.info('backup.skipped', { reason: parsed.reason });
      } else {
        this.#failures++;
        this.d.logger.error('backup.failed', {
          dir: this.d.schedule.dir,
          error: last.replace(/^error: /, '').slice(0, 500),
        });
      }
    } finally {
      this.#running = false;
    }
  }

  #child(): Promise<{ code: number | null; out: string }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [...process.execArgv, this.#cli, 'backup-scheduled'], {
        env: process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      child.once('error', (err) => resolve({ code: null, out: `error: ${err.message}` }));
      child.once('close', (code) => resolve({ code, out }));
    });
  }
}
