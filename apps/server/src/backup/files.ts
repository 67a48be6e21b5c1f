import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath, rename } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { BackupProblem } from '@strongroom/core';
import { writeAll } from '@strongroom/adapters-node';

/** The data directory's layout (SQLite database, server key, blob store root). */
export const DATABASE_FILE = 'strongroom.db';
export const SECRET_KEY_FILE = 'secret.key';
export const BLOB_ROOT = 'blobs';
/** Written first by restore and removed last: a server refuses to start beside it. */
export const RESTORE_MARKER = 'restore.incomplete';
/**
 * Left by a restore of a PostgreSQL backup (whose dump is loaded afterwards with pg_restore): a
 * server refuses to start beside it until `close-restored-sessions` has closed what a restore
 * closes (core's `closeRestoredDeployment`) and removed it.
 */
export const CLOSE_SESSIONS_MARKER = 'restore.close-sessions';
/** Beside the blobs: a backup and a GC sweep take it in turn. */
export const MAINTENANCE_LOCK = 'maintenance.lock';
/** The backup's description (format, database kind, schema, key fingerprint). */
export const BACKUP_INFO_FILE = 'backup.json';
/** On object storage: the objects the ledger references, one `<sha256> <size>` line each. */
export const OBJECTS_FILE = 'objects.txt';
/** Where the printed `pg_dump` command writes the database of a PostgreSQL deployment. */
export const PG_DUMP_FILE = 'strongroom.pgdump';

/** An age-encrypted file of a backup is its plain name with this suffix (`strongroom.db.age`). */
export const AGE_SUFFIX = '.age';
/**
 * Beside the live database, while an encrypted backup runs: the snapshot (or dump) before it is
 * encrypted into the backup, so no plaintext copy is ever written into the backup directory. Owner
 * only, as everything in the data directory; removed when the backup ends (and, if one was killed,
 * by the next).
 */
export const BACKUP_SNAPSHOT = 'backup-snapshot.tmp';

/** A blob's place in a backup (and in the data dir's blob store): `blobs/<2 hex>/<sha256>`. */
export const blobPath = (hash: string): string => `${BLOB_ROOT}/${hash.slice(0, 2)}/${hash}`;

/** A failure naming its file; the CLI prints it as one line. */
export class BackupFailure extends Error {
  override readonly name = 'BackupFailure';
  constructor(readonly problem: BackupProblem) {
    super(`${problem.file}: ${problem.cause}`);
  }
}

/** An I/O error's cause in words an operator acts on. */
export function causeOf(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  switch (e?.code) {
    case 'ENOSPC':
      return 'no space left on the device';
    case 'EDQUOT':
      return 'disk quota exceeded';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOENT':
      return 'missing';
    case 'EROFS':
      return 'read-only file system';
    default:
      return (e?.message ?? String(err)).replace(/\s+/g, ' ');
  }
}

/** Runs `step`, turning any error into a failure that names `file`. */
export async function naming<T>(file: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof BackupFailure) throw err;
    throw new BackupFailure({ file, cause: causeOf(err) });
  }
}

/**
 * Writes a stream to a new file (never over an existing one), fsynced, hashing as it goes. At most
 * `maxBytes` are written: a source that grew is refused instead of filling the disk.
 */
export async function writeStream(
  path: string,
  body: AsyncIterable<Uint8Array>,
  mode = 0o600,
): Promise<{ sha256: string; size: number }> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const file = await open(path, 'wx', mode);
  const hash = createHash('sha256');
  let size = 0;
  try {
    for await (const chunk of body) {
      hash.update(chunk);
      size += chunk.length;
      await writeAll(file, chunk);
    }
    await file.sync();
  } finally {
    await file.close();
  }
  return { sha256: hash.digest('hex'), size };
}

export async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** Writes bytes to `path` through a temp file and a rename, so the name appears only whole. */
export async function writeWhole(
  path: string,
  bytes: Uint8Array,
  mode = 0o600,
): Promise<{ sha256: string; size: number }> {
  const temp = `${path}.tmp`;
  const r = await writeStream(temp, once(bytes), mode);
  await rename(temp, path);
  return r;
}

/** SHA-256 and size of a regular file; a symbolic link or anything else is refused (null: missing). */
export async function hashFile(path: string): Promise<{ sha256: string; size: number } | 'not_a_file' | null> {
  let st;
  try {
    st = await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  if (!st.isFile()) return 'not_a_file';
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), size };
}

/** fsync a directory, so the names just created in it survive a power cut. */
export async function syncDir(path: string): Promise<void> {
  const dir = await open(path, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** Whether the directory is absent or holds nothing. */
export async function emptyOrAbsent(path: string): Promise<'absent' | 'empty' | 'not_empty' | 'not_a_directory'> {
  let st;
  try {
    st = await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw e;
  }
  if (st.isSymbolicLink()) {
    // A link to a directory (a mount elsewhere) is followed; a dangling one is not a directory.
    try {
      st = await lstat(await realpath(path));
    } catch {
      return 'not_a_directory';
    }
  }
  if (!st.isDirectory()) return 'not_a_directory';
  return (await readdir(path)).length === 0 ? 'empty' : 'not_empty';
}

/** The real path of `path`, or of its nearest existing ancestor joined with the rest. */
export async function realish(path: string): Promise<string> {
  const abs = resolve(path);
  try {
    return await realpath(abs);
  } catch {
    const parent = dirname(abs);
    if (parent === abs) return abs;
    return join(await realish(parent), abs.slice(parent.length + (parent.endsWith(sep) ? 0 : 1)));
  }
}

/** Whether `inner` is `outer` or lies under it (real paths, so a symlink cannot hide it). */
export function within(inner: string, outer: string): boolean {
  const rel = relative(outer, inner);
  // Outside means a first segment of `..` exactly: a child named `..bk` is inside.
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
