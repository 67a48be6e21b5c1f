import { createReadStream } from 'node:fs';
import { copyFile, mkdir, open, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FsBlobStore } from '@strongroom/adapters-node';
import {
  closeRestoredDeployment,
  secretKeyFingerprint,
  toBase64url,
  type Clock,
  type RestoreClosing,
} from '@strongroom/core';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import type { Config } from '../config.js';
import type { BackupOpener } from './age.js';
import {
  BackupFailure,
  BLOB_ROOT,
  blobPath,
  CLOSE_SESSIONS_MARKER,
  DATABASE_FILE,
  emptyOrAbsent,
  naming,
  PG_DUMP_FILE,
  realish,
  RESTORE_MARKER,
  SECRET_KEY_FILE,
  syncDir,
  within,
} from './files.js';
import { verifyBackup, type VerifiedBackup } from './verify.js';
import { openBlobStore } from '../blob-store.js';

export interface RestoreReport {
  readonly dataDir: string;
  readonly backup: VerifiedBackup;
  /** On PostgreSQL, the command that restores the database. */
  readonly pgRestore: string | null;
  /**
   * What the restore closed (core's `closeRestoredDeployment`); on PostgreSQL, null: the dump is
   * not loaded yet, and `close-restored-sessions` closes them after pg_restore (`pendingClose`).
   */
  readonly closed: RestoreClosing | null;
  /** On PostgreSQL without --keep-sessions: the data directory holds the close-sessions marker until that step runs. */
  readonly pendingClose: boolean;
}

export interface RestoreOptions {
  readonly opener?: BackupOpener | null;
  readonly keyFile?: { readonly path: string; readonly key: Uint8Array } | null;
  /** `--keep-sessions`: the restored deployment keeps every session open as backed up. */
  readonly keepSessions?: boolean;
  readonly clock: Clock;
}

/**
 * Restores a backup into SVC_DATA_DIR, which must be absent or empty (anything in it is left
 * untouched and the restore refused, naming the path). The whole backup is verified first, so a
 * damaged one is refused before anything is written. Then: a marker (a server refuses to start
 * beside it), the blobs (through the blob store, which checks each one's SHA-256 again as it
 * commits it), the key, the database (under a temporary name, renamed when whole), what a restore
 * closes applied to it (core's `closeRestoredDeployment`, unless `keepSessions`: a restore cannot
 * know what was revoked after the backup), and the marker removed last. On PostgreSQL the dump is
 * loaded afterwards by pg_restore, so the closing waits for `close-restored-sessions`, and a marker
 * keeps the server from starting until then. If anything fails midway (a full disk), what was
 * written is removed again.
 */
export async function restoreBackup(config: Config, source: string, options: RestoreOptions): Promise<RestoreReport> {
  const target = config.dataDir;
  const state = await naming(target, () => emptyOrAbsent(target));
  if (state === 'not_empty')
    throw new BackupFailure({
      file: target,
      cause: 'is not empty; restore only into an empty SVC_DATA_DIR (nothing was changed)',
    });
  if (state === 'not_a_directory')
    throw new BackupFailure({ file: target, cause: 'is not a directory (nothing was changed)' });
  const [dataReal, backupReal] = [await realish(target), await realish(source)];
  if (within(dataReal, backupReal) || within(backupReal, dataReal))
    throw new BackupFailure({ file: target, cause: `overlaps the backup ${source}` });

  // An object-store backup's blobs stay in that store: it must be the one configured, and holding them.
  const objects = (config.blobStore?.kind ?? 'file') === 'file' ? null : await openBlobStore(config);
  let backup: VerifiedBackup;
  try {
    backup = await verifyBackup(source, {
      envKey: config.secretKey,
      keyFile: options.keyFile ?? null,
      opener: options.opener ?? null,
      objects: objects?.blobs ?? null,
    });
  } finally {
    objects?.close();
  }
  try {
    return await restoreVerified(config, source, backup, state, options);
  } finally {
    await backup.dispose();
  }
}

async function restoreVerified(
  config: Config,
  source: string,
  backup: VerifiedBackup,
  state: 'absent' | 'empty',
  options: RestoreOptions,
): Promise<RestoreReport> {
  const target = config.dataDir;
  if (backup.info.database === 'sqlite' && config.databaseUrl !== null) {
    throw new BackupFailure({
      file: join(source, DATABASE_FILE),
      cause: 'is a SQLite backup but SVC_DATABASE_URL is set; unset it to restore onto SQLite',
    });
  }
  if (backup.info.database === 'postgresql' && config.databaseUrl === null) {
    throw new BackupFailure({
      file: source,
      cause: 'is a PostgreSQL backup; set SVC_DATABASE_URL to the database you restore the dump into',
    });
  }
  // The environment's key wins over the restored key file when the server starts: one that is not
  // the backup's would leave a copy that refuses to start, so it is refused here, before any write.
  if (
    backup.keyFromBackup &&
    config.secretKey !== null &&
    secretKeyFingerprint(config.secretKey) !== backup.info.key_fingerprint
  ) {
    throw new BackupFailure({
      file: 'SVC_SECRET_KEY',
      cause:
        "is not the key this backup was taken with; unset it to use the backup's secret.key, or set it to that key (nothing was changed)",
    });
  }
  // A --key-file beside SVC_SECRET_KEY: the environment's key wins at start, so they must agree.
  if (
    options.keyFile &&
    config.secretKey !== null &&
    secretKeyFingerprint(config.secretKey) !== secretKeyFingerprint(options.keyFile.key)
  ) {
    throw new BackupFailure({
      file: 'SVC_SECRET_KEY',
      cause: `is not the key in ${options.keyFile.path}; unset it, or give only one (nothing was changed)`,
    });
  }
  if (
    options.keyFile &&
    backup.keyFromBackup &&
    secretKeyFingerprint(options.keyFile.key) !== backup.info.key_fingerprint
  ) {
    throw new BackupFailure({
      file: options.keyFile.path,
      cause: 'is not the key this backup was taken with (nothing was changed)',
    });
  }
  // Written into the data directory unless it comes from SVC_SECRET_KEY, as the server would find it.
  const keyToWrite = config.secretKey === null ? backup.key : null;

  const created = state === 'absent';
  try {
    await naming(target, () => mkdir(target, { recursive: true, mode: 0o700 }));
    await naming(join(target, RESTORE_MARKER), () =>
      writeFile(join(target, RESTORE_MARKER), `restoring ${source}\n`, { flag: 'wx', mode: 0o600 }),
    );
    const store = new FsBlobStore(join(target, BLOB_ROOT));
    let n = 0;
    // Copied blobs come back into the data directory; listed ones are in the object store already.
    for (const b of backup.info.blob_mode === 'copy' ? backup.blobs : []) {
      const from = join(source, blobPath(b.contentHash));
      const staging = `restore-${n++}`;
      // Named by where it goes: that is where a full disk or a permission bites (the source was just verified).
      await naming(join(target, BLOB_ROOT, blobPath(b.contentHash)), async () => {
        const staged = await store.stage(
          staging,
          createReadStream(from, { highWaterMark: 1 << 20 }) as AsyncIterable<Uint8Array>,
          b.size,
        );
        if (staged === null)
          throw new BackupFailure({ file: from, cause: `is larger than the ${b.size} bytes the ledger records` });
        const outcome = await store.commit(staging, b.contentHash);
        await store.discard(staging);
        if (outcome !== 'stored')
          throw new BackupFailure({
            file: from,
            cause:
              outcome === 'hash_mismatch'
                ? 'changed while being restored (SHA-256 differs)'
                : 'vanished while being restored',
          });
      });
    }
    if (keyToWrite !== null) {
      // Created 0600 from the first byte: the key is never readable by others, not even briefly.
      await naming(join(target, SECRET_KEY_FILE), async () =>
        writeFile(join(target, SECRET_KEY_FILE), `${toBase64url(keyToWrite)}\n`, { flag: 'wx', mode: 0o600 }),
      );
    }
    let pgRestore: string | null = null;
    let closed: RestoreClosing | null = null;
    const keepSessions = options.keepSessions ?? false;
    if (backup.info.database === 'sqlite') {
      const temp = join(target, `${DATABASE_FILE}.restoring`);
      await naming(join(target, DATABASE_FILE), async () => {
        // The verified copy in the clear (the backup's file, or its decryption).
        await copyFile(backup.database, temp);
        const fh = await open(temp, 'r+');
        await fh.sync();
        await fh.close();
        await rename(temp, join(target, DATABASE_FILE));
      });
      // Before the restore marker goes: a server never starts on the copy with its sessions still open.
      closed = await naming(join(target, DATABASE_FILE), async () => {
        const db = openSqliteDatabase(join(target, DATABASE_FILE), { create: false });
        try {
          return await closeRestoredDeployment(createSqlitePorts(db), options.clock, { keepSessions });
        } finally {
          db.close();
        }
      });
    } else {
      let dump = join(source, PG_DUMP_FILE);
      if (backup.info.encryption !== 'none') {
        // The decrypted dump, owner-only in the data directory, for pg_restore to read.
        dump = join(target, PG_DUMP_FILE);
        await naming(dump, () => copyFile(backup.database, dump));
      }
      pgRestore = `pg_restore --no-owner --dbname="$SVC_DATABASE_URL" ${dump}   # into an empty database`;
      // The server refuses to start beside this marker until close-restored-sessions ran.
      if (!keepSessions)
        await naming(join(target, CLOSE_SESSIONS_MARKER), () =>
          writeFile(join(target, CLOSE_SESSIONS_MARKER), `restored ${source}, taken ${backup.info.created_at}\n`, {
            flag: 'wx',
            mode: 0o600,
          }),
        );
    }
    await naming(target, () => syncDir(target));
    await rm(join(target, RESTORE_MARKER));
    await naming(target, () => syncDir(target));
    return {
      dataDir: target,
      backup,
      pgRestore,
      closed,
      pendingClose: backup.info.database === 'postgresql' && !keepSessions,
    };
  } catch (err) {
    // The directory was empty: everything in it now is ours to take back.
    if (created) await rm(target, { recursive: true, force: true });
    else
      for (const name of await readdir(target).catch(() => []))
        await rm(join(target, name), { recursive: true, force: true });
    throw err;
  }
}
