import { readFile } from 'node:fs/promises';
import type { BlobStore } from '@strongroom/core';
import { join } from 'node:path';
import { checkManifest, fromBase64url, MANIFEST_FILE, parseManifest, refuseNewerSchema, secretKeyFingerprint, type ManifestEntry } from '@strongroom/core';
import { buildSchemaVersion, SqliteBackupReader } from '@strongroom/adapters-sqlite';
import { BACKUP_INFO_FILE, BackupFailure, blobPath, DATABASE_FILE, hashFile, naming, OBJECTS_FILE, SECRET_KEY_FILE } from './files.js';
import type { BackupInfo } from './take.js';
import { rowNamed, SEALED_COLUMNS } from './sealed.js';

export interface VerifiedBackup {
  readonly info: BackupInfo;
  readonly entries: readonly ManifestEntry[];
  /** The key the backup's secrets are sealed under (from the backup, or SVC_SECRET_KEY). */
  readonly key: Uint8Array;
  readonly keyFromBackup: boolean;
  readonly blobs: readonly { contentHash: string; size: number }[];
  readonly sealedValues: number;
}

/**
 * Checks a backup as `restore` would need it, stopping at the first problem (a BackupFailure
 * naming the file and the cause): the manifest is there and well formed; the database copy opens,
 * passes SQLite's quick_check and has a schema this build accepts (the same or older: a restore
 * migrates it forward); the key is a key, is the one the database records, and opens every value of
 * every sealed column; every blob the ledger references is there with its SHA-256 and size; and
 * every file the manifest lists is there with its SHA-256. The database and the key are checked
 * before the manifest, so a damaged database or another key is reported as that, not as a hash.
 */
export async function verifyBackup(dir: string, options: { envKey: Uint8Array | null; objects?: BlobStore | null }): Promise<VerifiedBackup> {
  const at = (rel: string) => join(dir, rel);
  const manifestText = await readFile(at(MANIFEST_FILE), 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') throw new BackupFailure({ file: at(MANIFEST_FILE), cause: 'missing: the backup did not finish, or this is not a backup directory' });
    throw new BackupFailure({ file: at(MANIFEST_FILE), cause: err.message });
  });
  const parsed = parseManifest(manifestText);
  if (!parsed.ok) throw new BackupFailure({ file: at(parsed.problem.file), cause: parsed.problem.cause });
  const entries = parsed.entries;
  const listed = new Set(entries.map((e) => e.path));
  // Hashes computed once, shared by the blob and manifest checks.
  const hashes = new Map<string, { sha256: string; size: number } | 'not_a_file' | null>();
  const hashOf = async (rel: string) => {
    if (!hashes.has(rel)) hashes.set(rel, await naming(at(rel), () => hashFile(at(rel))));
    return hashes.get(rel)!;
  };

  const info = await readInfo(at(BACKUP_INFO_FILE));

  // The key.
  let key: Uint8Array;
  let keyFromBackup = false;
  if (listed.has(SECRET_KEY_FILE)) {
    const text = await naming(at(SECRET_KEY_FILE), () => readFile(at(SECRET_KEY_FILE), 'utf8'));
    const k = fromBase64url(text.trim());
    if (k === null || k.length !== 32) throw new BackupFailure({ file: at(SECRET_KEY_FILE), cause: 'does not hold a 32-byte base64url key' });
    key = k;
    keyFromBackup = true;
  } else if (options.envKey !== null) {
    key = options.envKey;
  } else {
    throw new BackupFailure({ file: at(SECRET_KEY_FILE), cause: 'is not in this backup (the server key came from SVC_SECRET_KEY): set SVC_SECRET_KEY to that key' });
  }
  const keyName = keyFromBackup ? at(SECRET_KEY_FILE) : 'SVC_SECRET_KEY';
  if (secretKeyFingerprint(key) !== info.key_fingerprint) {
    throw new BackupFailure({ file: keyName, cause: `is not the key this backup was taken with (fingerprint ${info.key_fingerprint.slice(0, 12)}…); the database's second factors and sealed keys would not open` });
  }

  // The database (SQLite; a PostgreSQL backup's database is the pg_dump file, checked by pg_restore).
  let blobs: { contentHash: string; size: number }[] = [];
  let sealedValues = 0;
  if (info.database === 'sqlite') {
    const file = at(DATABASE_FILE);
    if (!listed.has(DATABASE_FILE)) throw new BackupFailure({ file: at(MANIFEST_FILE), cause: `does not list ${DATABASE_FILE}` });
    const h = await hashOf(DATABASE_FILE);
    if (h === null) throw new BackupFailure({ file, cause: 'missing' });
    if (h === 'not_a_file') throw new BackupFailure({ file, cause: 'is not a regular file (a symbolic link?)' });
    let reader: SqliteBackupReader;
    try {
      reader = SqliteBackupReader.open(file);
    } catch (err) {
      throw new BackupFailure({ file, cause: `does not open as a database: ${(err as Error).message}` });
    }
    try {
      let damage: string | null;
      try {
        damage = reader.damage();
      } catch (err) {
        damage = (err as Error).message;
      }
      if (damage !== null) throw new BackupFailure({ file, cause: `is damaged (truncated or changed after the backup): ${damage}` });
      const stamp = reader.schema();
      if (stamp.version === 0) throw new BackupFailure({ file, cause: 'holds no Strongroom schema' });
      const newer = refuseNewerSchema(stamp, buildSchemaVersion());
      if (newer) throw new BackupFailure({ file, cause: `has schema version ${stamp.version}, newer than this build's ${buildSchemaVersion().version}; restore it with a newer build` });
      const recorded = reader.keyFingerprint();
      if (recorded !== null && recorded !== info.key_fingerprint) {
        throw new BackupFailure({ file: keyName, cause: 'is not the key this database\'s secrets are sealed under (its deployment record names another)' });
      }
      for (const col of SEALED_COLUMNS) {
        const open = col.opener(key);
        for (const row of reader.sealedValues(col.table, col.column, col.context)) {
          sealedValues++;
          if (!(await open(row.sealed, row.context))) {
            throw new BackupFailure({ file, cause: `${col.table}.${col.column} of ${rowNamed(col, row.context)} does not open with ${keyFromBackup ? SECRET_KEY_FILE : 'SVC_SECRET_KEY'}` });
          }
        }
      }
      blobs = reader.ledgerBlobs();
    } finally {
      reader.close();
    }
  }

  // On PostgreSQL the ledger is in the dump, which this build cannot read: the blobs are the ones
  // the backup copied from the live ledger (listed in the manifest), each checked against its name.
  if (info.database === 'postgresql' && info.blob_mode === 'copy') {
    for (const e of entries) {
      const m = /^blobs\/[0-9a-f]{2}\/([0-9a-f]{64})$/.exec(e.path);
      if (!m) continue;
      const h = await hashOf(e.path);
      if (h === null || h === 'not_a_file') continue; // reported by the manifest check below
      blobs.push({ contentHash: m[1]!, size: h.size });
    }
    if (blobs.length !== info.blobs) throw new BackupFailure({ file: at(MANIFEST_FILE), cause: `lists ${blobs.length} blobs; ${BACKUP_INFO_FILE} says ${info.blobs}` });
  }

  // The blobs the ledger references.
  if (info.blob_mode === 'copy') {
    for (const b of blobs) {
      const rel = blobPath(b.contentHash);
      const h = await hashOf(rel);
      if (h === null) throw new BackupFailure({ file: at(rel), cause: 'is referenced by the ledger but missing' });
      if (h === 'not_a_file') throw new BackupFailure({ file: at(rel), cause: 'is not a regular file (a symbolic link?)' });
      if (h.sha256 !== b.contentHash) throw new BackupFailure({ file: at(rel), cause: `holds bytes whose SHA-256 is ${h.sha256}` });
      if (h.size !== b.size) throw new BackupFailure({ file: at(rel), cause: `holds ${h.size} bytes; the ledger says ${b.size}` });
      if (!listed.has(rel)) throw new BackupFailure({ file: at(MANIFEST_FILE), cause: `does not list ${rel}` });
    }
  } else {
    // Object storage keeps the bytes itself: the backup lists them, and the listing is checked
    // against the ledger in the database copy and against the store (each object there at the
    // size the ledger records; its key is its SHA-256, which the store checked when it was
    // committed). Without the store configured there is nothing to check them against.
    if (!listed.has(OBJECTS_FILE)) throw new BackupFailure({ file: at(MANIFEST_FILE), cause: `does not list ${OBJECTS_FILE}` });
    const objects = parseObjects(await naming(at(OBJECTS_FILE), () => readFile(at(OBJECTS_FILE), 'utf8')), at(OBJECTS_FILE));
    if (info.database === 'sqlite') {
      for (const b of blobs) {
        if (objects.get(b.contentHash) !== b.size) throw new BackupFailure({ file: at(OBJECTS_FILE), cause: `does not list ${b.contentHash} (${b.size} bytes), which the ledger references` });
      }
    } else {
      blobs = [...objects].map(([contentHash, size]) => ({ contentHash, size }));
    }
    if (options.objects === undefined || options.objects === null) {
      throw new BackupFailure({ file: at(OBJECTS_FILE), cause: 'lists objects in an object store: set SVC_BLOB_URL (and its credentials) to that store to check them' });
    }
    for (const [contentHash, size] of objects) {
      const found = await options.objects.stat(contentHash);
      if (found === null) throw new BackupFailure({ file: `object ${contentHash}`, cause: 'is listed in the backup but missing from the object store' });
      if (found.size !== size) throw new BackupFailure({ file: `object ${contentHash}`, cause: `holds ${found.size} bytes in the object store; the backup lists ${size}` });
    }
  }

  // Every file the manifest lists.
  const observed = new Map<string, string | null>();
  for (const e of entries) {
    const h = await hashOf(e.path);
    if (h === 'not_a_file') throw new BackupFailure({ file: at(e.path), cause: 'is not a regular file (a symbolic link?)' });
    observed.set(e.path, h === null ? null : h.sha256);
  }
  const problem = checkManifest(entries, (p) => observed.get(p) ?? null);
  if (problem) throw new BackupFailure({ file: at(problem.file), cause: problem.cause });
  return { info, entries, key, keyFromBackup, blobs, sealedValues };
}

async function readInfo(path: string): Promise<BackupInfo> {
  const text = await naming(path, () => readFile(path, 'utf8'));
  let v: Partial<BackupInfo>;
  try {
    v = JSON.parse(text) as Partial<BackupInfo>;
  } catch {
    throw new BackupFailure({ file: path, cause: 'is not JSON' });
  }
  if (v.format !== 1) throw new BackupFailure({ file: path, cause: `has format ${String(v.format)}; this build reads format 1` });
  if ((v.database !== 'sqlite' && v.database !== 'postgresql') || typeof v.key_fingerprint !== 'string' || (v.blob_mode !== 'copy' && v.blob_mode !== 'manifest')) {
    throw new BackupFailure({ file: path, cause: 'does not describe a backup (database, key_fingerprint, blob_mode)' });
  }
  return v as BackupInfo;
}

/** `objects.txt`: one `<sha256> <size>` line per object the ledger referenced at the backup. */
function parseObjects(text: string, file: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const m = /^([0-9a-f]{64}) (\d{1,16})$/.exec(line);
    if (m === null) throw new BackupFailure({ file, cause: `holds a line that is not "<sha256> <size>": ${line.slice(0, 80)}` });
    out.set(m[1]!, Number(m[2]));
  }
  return out;
}
