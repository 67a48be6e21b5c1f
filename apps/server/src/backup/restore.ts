import { createReadStream } from 'node:fs';
import { copyFile, mkdir, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FsBlobStore } from '@strongroom/adapters-node';
import { secretKeyFingerprint } from '@strongroom/core';
import type { Config } from '../config.js';
import { BackupFailure, BLOB_ROOT, blobPath, DATABASE_FILE, emptyOrAbsent, naming, PG_DUMP_FILE, realish, RESTORE_MARKER, SECRET_KEY_FILE, syncDir, within } from './files.js';
import { verifyBackup, type VerifiedBackup } from './verify.js';
import { openBlobStore } from '../blob-store.js';

export interface RestoreReport {
  readonly dataDir: string;
  readonly backup: VerifiedBackup;
  /** On PostgreSQL, the command that restores the database. */
  readonly pgRestore: string | null;
}

/**
 * Restores a backup into SVC_DATA_DIR, which must be absent or empty (anything in it is left
 * untouched and the restore refused, naming the path). The whole backup is verified first, so a
 * damaged one is refused before anything is written. Then: a marker (a server refuses to start
 * beside it), the blobs (through the blob store, which checks each one's SHA-256 again as it
 * commits it), the key, the database (under a temporary name, renamed when whole), and the marker
 * removed last. If anything fails midway (a full disk), what was written is removed again.
 */
export async function restoreBackup(config: Config, source: string): Promise<RestoreReport> {
  const target = config.dataDir;
  const state = await naming(target, () => emptyOrAbsent(target));
  if (state === 'not_empty') throw new BackupFailure({ file: target, cause: 'is not empty; restore only into an empty SVC_DATA_DIR (nothing was changed)' });
  if (state === 'not_a_directory') throw new BackupFailure({ file: target, cause: 'is not a directory (nothing was changed)' });
  const [dataReal, backupReal] = [await realish(target), await realish(source)];
  if (within(dataReal, backupReal) || within(backupReal, dataReal)) throw new BackupFailure({ file: target, cause: `overlaps the backup ${source}` });

  // An object-store backup's blobs stay in that store: it must be the one configured, and holding them.
  const objects = (config.blobStore?.kind ?? 'file') === 'file' ? null : await openBlobStore(config);
  let backup: VerifiedBackup;
  try {
    backup = await verifyBackup(source, { envKey: config.secretKey, objects: objects?.blobs ?? null });
  } finally {
    objects?.close();
  }
  if (backup.info.database === 'sqlite' && config.databaseUrl !== null) {
    throw new BackupFailure({ file: join(source, DATABASE_FILE), cause: 'is a SQLite backup but SVC_DATABASE_URL is set; unset it to restore onto SQLite' });
  }
  if (backup.info.database === 'postgresql' && config.databaseUrl === null) {
    throw new BackupFailure({ file: source, cause: 'is a PostgreSQL backup; set SVC_DATABASE_URL to the database you restore the dump into' });
  }
  // The environment's key wins over the restored key file when the server starts: one that is not
  // the backup's would leave a copy that refuses to start, so it is refused here, before any write.
  if (backup.keyFromBackup && config.secretKey !== null && secretKeyFingerprint(config.secretKey) !== backup.info.key_fingerprint) {
    throw new BackupFailure({ file: 'SVC_SECRET_KEY', cause: "is not the key this backup was taken with; unset it to use the backup's secret.key, or set it to that key (nothing was changed)" });
  }
  if (!backup.keyFromBackup && config.secretKey === null) {
    throw new BackupFailure({ file: join(source, SECRET_KEY_FILE), cause: 'is not in this backup: set SVC_SECRET_KEY to the key it was taken with' });
  }

  const created = state === 'absent';
  try {
    await naming(target, () => mkdir(target, { recursive: true, mode: 0o700 }));
    await naming(join(target, RESTORE_MARKER), () => writeFile(join(target, RESTORE_MARKER), `restoring ${source}\n`, { flag: 'wx', mode: 0o600 }));
    const store = new FsBlobStore(join(target, BLOB_ROOT));
    let n = 0;
    // Copied blobs come back into the data directory; listed ones are in the object store already.
    for (const b of backup.info.blob_mode === 'copy' ? backup.blobs : []) {
      const from = join(source, blobPath(b.contentHash));
      const staging = `restore-${n++}`;
      // Named by where it goes: that is where a full disk or a permission bites (the source was just verified).
      await naming(join(target, BLOB_ROOT, blobPath(b.contentHash)), async () => {
        const staged = await store.stage(staging, createReadStream(from, { highWaterMark: 1 << 20 }) as AsyncIterable<Uint8Array>, b.size);
        if (staged === null) throw new BackupFailure({ file: from, cause: `is larger than the ${b.size} bytes the ledger records` });
        const outcome = await store.commit(staging, b.contentHash);
        await store.discard(staging);
        if (outcome !== 'stored') throw new BackupFailure({ file: from, cause: outcome === 'hash_mismatch' ? 'changed while being restored (SHA-256 differs)' : 'vanished while being restored' });
      });
    }
    if (backup.keyFromBackup) {
      // Created 0600 from the first byte: the key is never readable by others, not even briefly.
      await naming(join(target, SECRET_KEY_FILE), async () => writeFile(join(target, SECRET_KEY_FILE), await readFile(join(source, SECRET_KEY_FILE)), { flag: 'wx', mode: 0o600 }));
    }
    let pgRestore: string | null = null;
    if (backup.info.database === 'sqlite') {
      const temp = join(target, `${DATABASE_FILE}.restoring`);
      await naming(join(target, DATABASE_FILE), async () => {
        await copyFile(join(source, DATABASE_FILE), temp);
        const fh = await open(temp, 'r+');
        await fh.sync();
        await fh.close();
        await rename(temp, join(target, DATABASE_FILE));
      });
    } else {
      pgRestore = `pg_restore --no-owner --dbname="$SVC_DATABASE_URL" ${join(source, PG_DUMP_FILE)}   # into an empty database`;
    }
    await naming(target, () => syncDir(target));
    await rm(join(target, RESTORE_MARKER));
    await naming(target, () => syncDir(target));
    return { dataDir: target, backup, pgRestore };
  } catch (err) {
    // The directory was empty: everything in it now is ours to take back.
    if (created) await rm(target, { recursive: true, force: true });
    else for (const name of await readdir(target).catch(() => [])) await rm(join(target, name), { recursive: true, force: true });
    throw err;
  }
}
