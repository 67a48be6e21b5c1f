import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  backupHoldsKey,
  formatManifest,
  fromBase64url,
  MANIFEST_FILE,
  NoDeploymentError,
  putBackAllQuarantined,
  sealManifest,
  secretKeyFingerprint,
  toBase64url,
  utf8,
  type BlobStore,
  type ManifestEntry,
} from '@strongroom/core';
import { takeFileLock } from '@strongroom/adapters-node';
import { openBlobStore } from '../blob-store.js';
import { snapshotSqliteDatabase, SqliteBackupReader } from '@strongroom/adapters-sqlite';
import { openPgDatabase, withPgBackupSnapshot } from '@strongroom/adapters-pg';
import type { Config } from '../config.js';
import { encryptBytes, encryptFile, type BackupSealing } from './age.js';
import {
  AGE_SUFFIX,
  BACKUP_INFO_FILE,
  BACKUP_SNAPSHOT,
  BackupFailure,
  BLOB_ROOT,
  blobPath,
  causeOf,
  DATABASE_FILE,
  emptyOrAbsent,
  hashFile,
  MAINTENANCE_LOCK,
  naming,
  OBJECTS_FILE,
  PG_DUMP_FILE,
  realish,
  SECRET_KEY_FILE,
  syncDir,
  within,
  writeStream,
  writeWhole,
} from './files.js';

export type BackupEncryption = 'age-x25519' | 'age-passphrase' | 'none';

export const encryptionOf = (sealing: BackupSealing): BackupEncryption =>
  sealing.kind === 'recipients' ? 'age-x25519' : sealing.kind === 'passphrase' ? 'age-passphrase' : 'none';

/** `backup.json`: what the backup is, read by verify-backup and restore. */
export interface BackupInfo {
  /** 2: the manifest carries a MAC, and the database, key and manifest may be age-encrypted. */
  readonly format: 2;
  readonly created_at: string;
  readonly database: 'sqlite' | 'postgresql';
  /** Migrations applied in the copied database (SQLite); null on PostgreSQL (in the dump). */
  readonly schema_version: number | null;
  /** Keyed fingerprint of the server key (never the key): tells another key apart. */
  readonly key_fingerprint: string;
  /**
   * Whether `secret.key.age` is in the backup: only in an encrypted backup of a deployment whose
   * key is the data directory's file. An unencrypted backup never holds the key, nor does any
   * backup of a key from SVC_SECRET_KEY: keep that key apart and give it to restore.
   */
  readonly key_in_backup: boolean;
  /** How the database, key and manifest are sealed: to age X25519 recipients, to a passphrase, or not. */
  readonly encryption: BackupEncryption;
  readonly blob_mode: 'copy' | 'manifest';
  readonly blobs: number;
  readonly blob_bytes: number;
}

export interface BackupReport {
  readonly dir: string;
  readonly info: BackupInfo;
  /** The manifest's body (every file and its SHA-256), as `sha256sum -c` reads it. */
  readonly manifest: string;
  /** `MANIFEST.sha256.age` or, unencrypted, `MANIFEST.sha256`. */
  readonly manifestName: string;
  /** On PostgreSQL, the pg_dump command the backup ran (the password never in it). */
  readonly pgDump: string | null;
}

/** The server key as the running server has it: SVC_SECRET_KEY, else the data dir's file (never created here). */
export async function currentSecretKey(config: Config): Promise<{ key: Uint8Array; fromFile: string | null }> {
  if (config.secretKey) return { key: config.secretKey, fromFile: null };
  const path = join(config.dataDir, SECRET_KEY_FILE);
  const text = await naming(path, () => readFile(path, 'utf8'));
  const key = fromBase64url(text.trim());
  if (key === null || key.length !== 32)
    throw new BackupFailure({ file: path, cause: 'does not hold a 32-byte base64url key' });
  return { key, fromFile: path };
}

/**
 * Takes a backup of the running deployment into `target` (absent or empty), in this order:
 * 1. the maintenance lock beside the blobs, so no GC sweep deletes a blob between steps 2 and 4;
 * 2. the database (SQLite's `VACUUM INTO`: one consistent snapshot, while the server writes on; on
 *    PostgreSQL, `pg_dump` of a snapshot exported by the transaction the ledger is read in),
 *    age-encrypted into the backup unless `sealing` is none (the plaintext snapshot is made in the
 *    data directory, never in the backup);
 * 3. the server key, checked against the snapshot's record, written age-encrypted when the
 *    backup is encrypted and the key is the data directory's file; an unencrypted backup never
 *    holds it, so copying the folder opens nothing sealed;
 * 4. every blob the snapshot's ledger references (put back first if a gc-sweep that stopped
 *    midway left it in quarantine), hashed as copied, as stored (blobs are client-side
 *    ciphertext). The database goes first: an upload stores its blob before the ledger row naming
 *    it, and blobs never change, so every blob the snapshot references already exists; taken the
 *    other way round, the copy could reference blobs stored after the blob copy. Blobs stored
 *    after the snapshot are left out (nothing references them there), as are staged uploads;
 * 5. `backup.json` and, last, the manifest with its MAC under the server key (core's
 *    `sealManifest`), age-encrypted as `MANIFEST.sha256.age` or plain as `MANIFEST.sha256`: a
 *    directory without it is an unfinished backup.
 */
export async function takeBackup(
  config: Config,
  target: string,
  options: { now: () => number; blobs?: BlobStore; sealing: BackupSealing },
): Promise<BackupReport> {
  const sealing = options.sealing;
  const dataDir = await realish(config.dataDir);
  const dir = await realish(target);
  if (within(dir, dataDir))
    throw new BackupFailure({
      file: target,
      cause: `is inside SVC_DATA_DIR (${config.dataDir}); a backup must live elsewhere, ideally on another disk`,
    });
  if (within(dataDir, dir))
    throw new BackupFailure({ file: target, cause: `contains SVC_DATA_DIR (${config.dataDir})` });
  await deploymentToBackUp(config);
  const state = await naming(target, () => emptyOrAbsent(target));
  if (state === 'not_empty')
    throw new BackupFailure({ file: target, cause: 'is not empty; back up into a new or empty directory' });
  if (state === 'not_a_directory') throw new BackupFailure({ file: target, cause: 'is not a directory' });
  await naming(target, () => mkdir(target, { recursive: true, mode: 0o700 }));
  // Only its owner may read it, encrypted or not.
  await naming(target, () => chmod(target, 0o700));

  const lock = await naming(join(config.dataDir, MAINTENANCE_LOCK), () =>
    takeFileLock(join(config.dataDir, MAINTENANCE_LOCK), 'backup', options.now()),
  );
  let closeBlobs = (): void => undefined;
  // Under the lock, no other backup uses it: a snapshot left by a killed one goes first.
  const snapshot = join(config.dataDir, BACKUP_SNAPSHOT);
  try {
    await naming(snapshot, () => rm(snapshot, { force: true }));
    const entries: ManifestEntry[] = [];
    const { key, fromFile } = await currentSecretKey(config);
    const fingerprint = secretKeyFingerprint(key);
    /** The database copy another program wrote at `written`, into the backup as `name` (encrypted, or in place). */
    const intoBackup = async (written: string, name: string): Promise<void> => {
      if (sealing.kind === 'none') {
        entries.push({ path: name, sha256: (await settleWrittenFile(written)).sha256 });
        return;
      }
      const out = join(target, name + AGE_SUFFIX);
      const w = await naming(out, () => encryptFile(written, out, sealing));
      entries.push({ path: name + AGE_SUFFIX, sha256: w.sha256 });
    };

    // 2. The database.
    let ledger: { contentHash: string; size: number }[];
    let schemaVersion: number | null = null;
    let pgDump: string | null = null;
    if (config.databaseUrl === null) {
      const out = sealing.kind === 'none' ? join(target, DATABASE_FILE) : snapshot;
      try {
        snapshotSqliteDatabase(join(config.dataDir, DATABASE_FILE), out);
      } catch (err) {
        // SQLite's own words (a full disk reads "database or disk is full"), naming both ends.
        throw new BackupFailure({
          file: out,
          cause: `snapshot of ${join(config.dataDir, DATABASE_FILE)} failed: ${causeOf(err)}`,
        });
      }
      if (sealing.kind !== 'none') await naming(out, () => chmod(out, 0o600));
      const reader = await naming(out, async () => SqliteBackupReader.open(out));
      try {
        ledger = reader.ledgerBlobs();
        schemaVersion = reader.schema().version;
        const recorded = reader.keyFingerprint();
        if (recorded !== null && recorded !== fingerprint) {
          throw new BackupFailure({
            file: fromFile ?? 'SVC_SECRET_KEY',
            cause: "is not the key this database's secrets are sealed under; the backup would not open them",
          });
        }
      } finally {
        reader.close();
      }
      await intoBackup(out, DATABASE_FILE);
    } else {
      // pg_dump dumps the snapshot the ledger is read in: the blobs copied below are exactly those
      // the dump's ledger references, however the server writes meanwhile.
      const out = sealing.kind === 'none' ? join(target, PG_DUMP_FILE) : snapshot;
      const pg = await naming('SVC_DATABASE_URL', () =>
        openPgDatabase(config.databaseUrl!, { maxConnections: 1, create: false }),
      );
      try {
        ledger = await naming('SVC_DATABASE_URL', () =>
          withPgBackupSnapshot(pg.db, async (snap, facts) => {
            if (facts.keyFingerprint !== null && facts.keyFingerprint !== fingerprint) {
              throw new BackupFailure({
                file: fromFile ?? 'SVC_SECRET_KEY',
                cause: "is not the key this database's secrets are sealed under; the backup would not open them",
              });
            }
            await runPgDump(config.databaseUrl!, snap, out);
            return facts.blobs;
          }),
        );
      } finally {
        await pg.close();
      }
      if (sealing.kind !== 'none') await naming(out, () => chmod(out, 0o600));
      await intoBackup(out, PG_DUMP_FILE);
      pgDump = `pg_dump --format=custom --no-owner --snapshot=<the backup's snapshot> --file=${shellQuote(out)}${sealing.kind === 'none' ? '' : `, then age-encrypted into ${PG_DUMP_FILE}${AGE_SUFFIX}`}`;
    }
    await naming(snapshot, () => rm(snapshot, { force: true }));

    // 3. The key: only encrypted, and only when it is the data directory's file.
    const keyInBackup = backupHoldsKey({ keyFromDataDir: fromFile !== null, sealing: sealing.kind });
    if (keyInBackup) {
      if (sealing.kind === 'none') throw new Error("an unencrypted backup never holds the key (core's backupHoldsKey)");
      const out = join(target, SECRET_KEY_FILE + AGE_SUFFIX);
      const w = await naming(out, () => encryptBytes(utf8(`${toBase64url(key)}\n`), out, sealing));
      entries.push({ path: SECRET_KEY_FILE + AGE_SUFFIX, sha256: w.sha256 });
    }

    // 4. The blobs.
    // The store the server runs on: an object store's blobs are listed, the filesystem's copied.
    const opened = options.blobs === undefined ? await openBlobStore(config) : null;
    closeBlobs = opened?.close ?? closeBlobs;
    const blobs = options.blobs ?? opened!.blobs;
    // A blob the snapshot's ledger names may sit in quarantine, where a gc-sweep that stopped
    // midway left it: it goes back first (blobs/handoff.ts). The snapshot answers for the ledger:
    // the maintenance lock keeps sweeps, the only ones to remove a row, out until the end (and a
    // put-back never loses anything, whatever runs beside it).
    const referenced = new Set(ledger.map((b) => b.contentHash));
    const quarantine =
      (config.blobStore?.kind ?? 'file') === 'file'
        ? join(config.dataDir, BLOB_ROOT, 'quarantine')
        : 'quarantine/ of SVC_BLOB_URL';
    await naming(quarantine, () => putBackAllQuarantined(blobs, async (hash) => referenced.has(hash)));
    let bytes = 0;
    if (blobs.backupMode === 'copy') {
      for (const b of ledger) {
        const rel = blobPath(b.contentHash);
        const source = await naming(join(config.dataDir, BLOB_ROOT, rel), () => blobs.stream(b.contentHash));
        if (source === null)
          throw new BackupFailure({
            file: join(config.dataDir, BLOB_ROOT, rel),
            cause: 'is referenced by the ledger but missing from the blob store',
          });
        const w = await naming(join(target, rel), () => writeStream(join(target, rel), source, 0o600));
        if (w.sha256 !== b.contentHash || w.size !== b.size) {
          throw new BackupFailure({
            file: join(config.dataDir, BLOB_ROOT, rel),
            cause: `is damaged in the blob store (SHA-256 ${w.sha256}, ${w.size} bytes; the ledger says ${b.size})`,
          });
        }
        entries.push({ path: rel, sha256: w.sha256 });
        bytes += w.size;
      }
    } else {
      const lines: string[] = [];
      for (const b of ledger) {
        if (!(await blobs.has(b.contentHash)))
          throw new BackupFailure({
            file: `object ${b.contentHash}`,
            cause: 'is referenced by the ledger but missing from the object store',
          });
        lines.push(`${b.contentHash} ${b.size}\n`);
        bytes += b.size;
      }
      const w = await naming(join(target, OBJECTS_FILE), () =>
        writeWhole(join(target, OBJECTS_FILE), utf8(lines.join(''))),
      );
      entries.push({ path: OBJECTS_FILE, sha256: w.sha256 });
    }

    // 5. What it is, then the manifest.
    const info: BackupInfo = {
      format: 2,
      created_at: new Date(options.now()).toISOString(),
      database: config.databaseUrl === null ? 'sqlite' : 'postgresql',
      schema_version: schemaVersion,
      key_fingerprint: fingerprint,
      key_in_backup: keyInBackup,
      encryption: encryptionOf(sealing),
      blob_mode: blobs.backupMode,
      blobs: ledger.length,
      blob_bytes: bytes,
    };
    const infoWritten = await naming(join(target, BACKUP_INFO_FILE), () =>
      writeWhole(join(target, BACKUP_INFO_FILE), utf8(`${JSON.stringify(info, null, 2)}\n`)),
    );
    entries.push({ path: BACKUP_INFO_FILE, sha256: infoWritten.sha256 });
    const manifest = formatManifest(entries);
    const sealed = sealManifest(key, manifest);
    const manifestName = sealing.kind === 'none' ? MANIFEST_FILE : MANIFEST_FILE + AGE_SUFFIX;
    await naming(join(target, manifestName), async () => {
      const dirs = new Set<string>();
      for (const e of entries) {
        const parts = e.path.split('/');
        for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
      }
      // Deepest first: each directory's new names are durable before its parent's.
      for (const d of [...dirs].sort((a, b) => b.length - a.length)) await syncDir(join(target, d));
      if (sealing.kind === 'none') await writeWhole(join(target, MANIFEST_FILE), utf8(sealed), 0o600);
      else {
        // Through a temporary name, as writeWhole: the manifest's name appears only whole.
        await encryptBytes(utf8(sealed), join(target, `${manifestName}.tmp`), sealing);
        await rename(join(target, `${manifestName}.tmp`), join(target, manifestName));
      }
      await syncDir(target);
    });
    return { dir, info, manifest, manifestName, pgDump };
  } finally {
    closeBlobs();
    await rm(snapshot, { force: true }).catch(() => undefined);
    await lock.release();
  }
}

/**
 * There is a deployment where the configuration points, before the backup writes anything (its
 * target, the maintenance lock): a mistyped SVC_DATA_DIR or an empty database is refused as
 * NoDeploymentError, and nothing is created or migrated there. The SQLite file is only looked for
 * (a backup copies the database as it stands, never migrates it).
 */
async function deploymentToBackUp(config: Config): Promise<void> {
  if (config.databaseUrl === null) {
    const file = join(config.dataDir, DATABASE_FILE);
    if (!existsSync(file)) throw new NoDeploymentError(`${file} does not exist`);
    return;
  }
  let pg;
  try {
    pg = await openPgDatabase(config.databaseUrl, { maxConnections: 1, create: false });
  } catch (err) {
    if (err instanceof NoDeploymentError) throw err;
    throw new BackupFailure({ file: 'SVC_DATABASE_URL', cause: causeOf(err) });
  }
  await pg.close();
}

/**
 * A database copy another program wrote (SQLite's VACUUM INTO, pg_dump): made owner-only, synced
 * (neither syncs its output) and hashed for the manifest.
 */
async function settleWrittenFile(path: string): Promise<{ sha256: string; size: number }> {
  return naming(path, async () => {
    const r = await hashFile(path);
    if (r === null || r === 'not_a_file') throw new Error('was not written');
    await chmod(path, 0o600);
    const fh = await open(path, 'r+');
    await fh.sync();
    await fh.close();
    return r;
  });
}

/**
 * `pg_dump` of the database at `url` as of `snapshot`, in its custom format, into `out`. The
 * connection goes to it through libpq's environment variables, so the password is never on a
 * command line another user of the machine could read. Refused, naming pg_dump, when it is not
 * installed or fails (its own words: a server newer than the tool, a refused connection).
 */
async function runPgDump(url: string, snapshot: string, out: string): Promise<void> {
  const u = new URL(url);
  const env: Record<string, string> = { ...process.env } as Record<string, string>;
  for (const name of ['PGHOST', 'PGPORT', 'PGUSER', 'PGPASSWORD', 'PGDATABASE', 'PGSSLMODE']) delete env[name];
  if (u.hostname) env.PGHOST = u.hostname.replace(/^\[|\]$/g, '');
  if (u.port) env.PGPORT = u.port;
  if (u.username) env.PGUSER = decodeURIComponent(u.username);
  if (u.password) env.PGPASSWORD = decodeURIComponent(u.password);
  const database = decodeURIComponent(u.pathname.slice(1));
  if (database) env.PGDATABASE = database;
  const sslmode = u.searchParams.get('sslmode');
  if (sslmode) env.PGSSLMODE = sslmode;
  const host = u.searchParams.get('host');
  if (host) env.PGHOST = host;
  const args = ['--format=custom', '--no-owner', `--snapshot=${snapshot}`, `--file=${out}`];
  await new Promise<void>((done, fail) => {
    const child = spawn('pg_dump', args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let said = '';
    child.stderr.on('data', (chunk: Buffer) => (said = (said + chunk.toString()).slice(-2000)));
    child.on('error', (err: NodeJS.ErrnoException) =>
      fail(
        new BackupFailure({
          file: 'pg_dump',
          cause:
            err.code === 'ENOENT'
              ? "is not installed; install PostgreSQL's client tools of the server's major version (Debian: postgresql-client)"
              : causeOf(err),
        }),
      ),
    );
    child.on('exit', (code) =>
      code === 0
        ? done()
        : fail(
            new BackupFailure({
              file: 'pg_dump',
              cause: `failed (exit ${code}): ${said.trim().split('\n').pop() ?? ''}`,
            }),
          ),
    );
  });
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
