import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import type { S3BlobStore } from '@strongroom/adapters-node/s3';
import { openBlobStore } from './blob-store.js';
import { ConfigError, type Config } from './config.js';

/**
 * What can fail at start is checked before anything is written (the secret key, the database, a
 * migration, the recorded base URL), and each failure is one line naming the setting, its value
 * and the cause. Without these a busy port surfaced as an unhandled 'error' event after the data
 * directory had already been initialised, and an unusable data directory as SQLite's "unable to
 * open database file" with no path.
 */

/** Whether the server could listen on host:port now (another process may still take it before we do). */
export async function checkPortFree(host: string, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => {
      const why =
        err.code === 'EADDRINUSE'
          ? 'the address is already in use'
          : err.code === 'EACCES'
            ? 'permission denied'
            : err.message;
      reject(new ConfigError(`PORT=${port}: cannot listen on ${host}:${port}: ${why} (${err.code ?? 'error'})`));
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/**
 * The data directory exists, is the server's user's alone (0700), and takes a durable write. It
 * holds the database, the secret key and the blobs: a directory an operator made in advance with a
 * looser mode (mkdir's 0755) is narrowed, and the mode it had is returned so that the start can say
 * so; null when nothing was changed.
 */
export function checkDataDir(dir: string): number | null {
  let narrowedFrom: number | null = null;
  try {
    makeDirectory(dir, 0o700);
    const mode = statSync(dir).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      chmodSync(dir, 0o700);
      narrowedFrom = mode;
    }
  } catch (err) {
    throw new ConfigError(`SVC_DATA_DIR=${dir}: cannot create it: ${reason(err)}`);
  }
  const probe = join(dir, `.write-check-${process.pid}`);
  try {
    const fd = openSync(probe, 'wx', 0o600);
    try {
      writeSync(fd, 'ok');
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    unlinkSync(probe);
  } catch (err) {
    throw new ConfigError(`SVC_DATA_DIR=${dir}: not a writable directory: ${reason(err)}`);
  }
  return narrowedFrom;
}

/**
 * mkdir -p, one level at a time. Node's own `recursive: true` retries forever under a directory that
 * answers ENOENT to every mkdir (/proc/x spun at 100 % CPU with no output).
 */
function makeDirectory(dir: string, mode: number): void {
  try {
    mkdirSync(dir, { mode });
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      if (!statSync(dir).isDirectory())
        throw Object.assign(new Error(`${dir} exists and is not a directory`), { code: 'ENOTDIR' });
      return;
    }
    const parent = dirname(dir);
    if (code !== 'ENOENT' || parent === dir) throw err;
  }
  makeDirectory(dirname(dir), mode);
  mkdirSync(dir, { mode });
}

/** A database URL as it may be printed: the password replaced. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

function reason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e?.code ? `${e.code} (${e.message.replace(/^[A-Z]+: /, '')})` : String(e?.message ?? err);
}

/**
 * Every SVC_* name the server asks the environment for, read or absent, so that a name it never asks
 * for (a misspelling such as SVC_QUOTA_HARD for SVC_QUOTA_HARD_BYTES) can be warned about.
 */
export function recordSettingReads(env: NodeJS.ProcessEnv): { env: NodeJS.ProcessEnv; asked: Set<string> } {
  const asked = new Set<string>();
  const recorded = new Proxy(env, {
    get(target, name, receiver) {
      if (typeof name === 'string' && name.startsWith('SVC_')) asked.add(name);
      return Reflect.get(target, name, receiver);
    },
  });
  return { env: recorded, asked };
}

/** The SVC_* variables set but never asked for, each with the closest name that was. */
export function unknownSettings(
  present: readonly string[],
  asked: ReadonlySet<string>,
): { name: string; closest: string | null }[] {
  const known = [...asked];
  return present
    .filter((name) => name.startsWith('SVC_') && !asked.has(name))
    .sort()
    .map((name) => {
      let closest: string | null = null;
      let best = Infinity;
      for (const k of known) {
        const d = editDistance(name, k);
        if (d < best) [best, closest] = [d, k];
      }
      // A guess further off than half the name is no help.
      return { name, closest: best <= Math.max(3, Math.floor(name.length / 2)) ? closest : null };
    });
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const here = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = here;
    }
  }
  return row[b.length]!;
}

/**
 * Object storage answers as the server needs it: credentials found, the bucket reachable, and a
 * probe object written, read back and deleted. A failure stops the start in one line naming
 * SVC_BLOB_URL (and SVC_S3_ENDPOINT when set) and the store's reason. The filesystem store is
 * checked with the data directory (checkDataDir).
 */
export async function checkObjectStore(config: Config): Promise<void> {
  const c = config.blobStore;
  if (c === undefined || c.kind !== 's3') return;
  const { blobs, close } = await openBlobStore(config);
  try {
    await (blobs as S3BlobStore).probe();
  } catch (err) {
    const where = `SVC_BLOB_URL=s3://${c.bucket}${c.prefix === '' ? '' : `/${c.prefix}`}${c.endpoint === null ? '' : ` (SVC_S3_ENDPOINT=${c.endpoint})`}`;
    throw new ConfigError(
      `${where}: the object store did not take a write, read and delete: ${(err as Error).message}`,
    );
  } finally {
    close();
  }
}
