import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import type { BlobStore } from '@strongroom/core';
import { join } from 'node:path';
import {
  checkManifest,
  fromBase64url,
  MANIFEST_FILE,
  openManifest,
  parseManifest,
  refuseNewerSchema,
  secretKeyFingerprint,
  type ManifestEntry,
} from '@strongroom/core';
import { buildSchemaVersion, SqliteBackupReader } from '@strongroom/adapters-sqlite';
import { decryptToBytes, decryptToFile, type BackupOpener } from './age.js';
import {
  AGE_SUFFIX,
  BACKUP_INFO_FILE,
  BackupFailure,
  blobPath,
  DATABASE_FILE,
  hashFile,
  naming,
  OBJECTS_FILE,
  PG_DUMP_FILE,
  SECRET_KEY_FILE,
} from './files.js';
import type { BackupInfo } from './take.js';
import { rowNamed, SEALED_COLUMNS } from './sealed.js';

/** Where the key that opens a backup came from. */
export type KeySource = 'backup' | 'SVC_SECRET_KEY' | '--key-file';

export interface VerifiedBackup {
  readonly info: BackupInfo;
  readonly entries: readonly ManifestEntry[];
  /** The key the backup's secrets are sealed under (from the backup, SVC_SECRET_KEY or --key-file). */
  readonly key: Uint8Array;
  readonly keyFromBackup: boolean;
  readonly keySource: KeySource;
  readonly blobs: readonly { contentHash: string; size: number }[];
  readonly sealedValues: number;
  /**
   * The database copy in the clear: the backup's own file, or, for an encrypted backup, its
   * decryption in an owner-only temporary directory that `dispose` removes.
   */
  readonly database: string;
  dispose(): Promise<void>;
}

export interface VerifyOptions {
  /** SVC_SECRET_KEY, when set. */
  readonly envKey: Uint8Array | null;
  /** The key given with --key-file (the data directory's secret.key kept apart from an unencrypted backup). */
  readonly keyFile?: { readonly path: string; readonly key: Uint8Array } | null;
  /** What opens an encrypted backup (--identity-file, SVC_BACKUP_IDENTITY_FILE, --passphrase-file). */
  readonly opener?: BackupOpener | null;
  readonly objects?: BlobStore | null;
}

/** A key file's text: one base64url 32-byte key, as the data directory's secret.key holds it. */
export function parseKeyText(text: string, file: string): Uint8Array {
  const k = fromBase64url(text.trim());
  if (k === null || k.length !== 32) throw new BackupFailure({ file, cause: 'does not hold a 32-byte base64url key' });
  return k;
}

/**
 * Checks a backup as `restore` would need it, stopping at the first problem (a BackupFailure
 * naming the file and the cause), in this order:
 * 1. the manifest is there (encrypted: it decrypts with the identity or passphrase given);
 * 2. the key: the backup's own (encrypted backups of a file key), else --key-file, else
 *    SVC_SECRET_KEY; it is the key `backup.json` names;
 * 3. the manifest's MAC verifies under that key (core's `openManifest`): nobody without the key
 *    can change a file and recompute the manifest;
 * 4. every file the manifest lists is there with its SHA-256;
 * 5. the database copy (decrypted if need be) opens, passes SQLite's quick_check, has a schema
 *    this build accepts (the same or older: a restore migrates it forward), records this key,
 *    and every value of every sealed column opens with it;
 * 6. every blob the ledger references is there with its SHA-256 and size.
 * The caller disposes of the result (it may hold a decrypted copy of the database).
 */
export async function verifyBackup(dir: string, options: VerifyOptions): Promise<VerifiedBackup> {
  const at = (rel: string) => join(dir, rel);
  const opener = options.opener ?? null;
  const needOpener = (rel: string): BackupOpener => {
    if (opener === null || (opener.identities.length === 0 && opener.passphrase === null)) {
      throw new BackupFailure({
        file: at(rel),
        cause:
          'is encrypted: give --identity-file <age identity file> (or SVC_BACKUP_IDENTITY_FILE), or --passphrase-file <file>',
      });
    }
    return opener;
  };

  // 1. The manifest.
  const encrypted =
    (await naming(at(MANIFEST_FILE + AGE_SUFFIX), () => hashFile(at(MANIFEST_FILE + AGE_SUFFIX)))) !== null;
  const manifestName = encrypted ? MANIFEST_FILE + AGE_SUFFIX : MANIFEST_FILE;
  let manifestText: string;
  if (encrypted) {
    manifestText = new TextDecoder().decode(await decryptToBytes(at(manifestName), needOpener(manifestName)));
  } else {
    manifestText = await readFile(at(MANIFEST_FILE), 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT')
        throw new BackupFailure({
          file: at(MANIFEST_FILE),
          cause: 'missing: the backup did not finish, or this is not a backup directory',
        });
      throw new BackupFailure({ file: at(MANIFEST_FILE), cause: err.message });
    });
  }
  const info = await readInfo(at(BACKUP_INFO_FILE));

  // 2. The key.
  const keyInBackup = SECRET_KEY_FILE + AGE_SUFFIX;
  let key: Uint8Array;
  let keySource: KeySource;
  if ((await naming(at(keyInBackup), () => hashFile(at(keyInBackup)))) !== null) {
    key = parseKeyText(
      new TextDecoder().decode(await decryptToBytes(at(keyInBackup), needOpener(keyInBackup))),
      at(keyInBackup),
    );
    keySource = 'backup';
  } else if (options.keyFile) {
    key = options.keyFile.key;
    keySource = '--key-file';
  } else if (options.envKey !== null) {
    key = options.envKey;
    keySource = 'SVC_SECRET_KEY';
  } else {
    throw new BackupFailure({
      file: at(keyInBackup),
      cause: `is not in this backup (${info.encryption === 'none' ? 'an unencrypted backup never holds the key' : 'the server key came from SVC_SECRET_KEY'}): give --key-file <the data directory's secret.key>, or set SVC_SECRET_KEY to the key`,
    });
  }
  const keyName =
    keySource === 'backup' ? at(keyInBackup) : keySource === '--key-file' ? options.keyFile!.path : 'SVC_SECRET_KEY';
  const keyFromBackup = keySource === 'backup';
  if (secretKeyFingerprint(key) !== info.key_fingerprint) {
    throw new BackupFailure({
      file: keyName,
      cause: `is not the key this backup was taken with (fingerprint ${info.key_fingerprint.slice(0, 12)}…); the database's second factors and sealed keys would not open`,
    });
  }

  // 3. The MAC.
  const opened = openManifest(key, manifestText);
  if (!opened.ok) throw new BackupFailure({ file: at(manifestName), cause: opened.problem.cause });
  const parsed = parseManifest(opened.body);
  if (!parsed.ok) throw new BackupFailure({ file: at(manifestName), cause: parsed.problem.cause });
  const entries = parsed.entries;
  const listed = new Set(entries.map((e) => e.path));
  // Hashes computed once, shared by the blob and manifest checks.
  const hashes = new Map<string, { sha256: string; size: number } | 'not_a_file' | null>();
  const hashOf = async (rel: string) => {
    if (!hashes.has(rel)) hashes.set(rel, await naming(at(rel), () => hashFile(at(rel))));
    return hashes.get(rel)!;
  };

  // 4. Every file the manifest lists.
  const observed = new Map<string, string | null>();
  for (const e of entries) {
    const h = await hashOf(e.path);
    if (h === 'not_a_file')
      throw new BackupFailure({ file: at(e.path), cause: 'is not a regular file (a symbolic link?)' });
    observed.set(e.path, h === null ? null : h.sha256);
  }
  const problem = checkManifest(entries, (p) => observed.get(p) ?? null);
  if (problem) throw new BackupFailure({ file: at(problem.file), cause: problem.cause });
  if (!listed.has(BACKUP_INFO_FILE))
    throw new BackupFailure({ file: at(manifestName), cause: `does not list ${BACKUP_INFO_FILE}` });
  if ((info.encryption === 'none') === encrypted)
    throw new BackupFailure({
      file: at(BACKUP_INFO_FILE),
      cause: `says encryption ${info.encryption}, but the manifest is ${encrypted ? '' : 'not '}encrypted`,
    });

  // 5. The database, in the clear: decrypted into an owner-only temporary directory.
  const dbName = info.database === 'sqlite' ? DATABASE_FILE : PG_DUMP_FILE;
  const dbInBackup = encrypted ? dbName + AGE_SUFFIX : dbName;
  if (!listed.has(dbInBackup))
    throw new BackupFailure({ file: at(manifestName), cause: `does not list ${dbInBackup}` });
  let scratch: string | null = null;
  const dispose = async () => {
    if (scratch !== null) await rm(scratch, { recursive: true, force: true });
    scratch = null;
  };
  let database = at(dbInBackup);
  try {
    if (encrypted) {
      scratch = await naming(tmpdir(), () => mkdtemp(join(tmpdir(), 'strongroom-verify-')));
      database = join(scratch, dbName);
      await decryptToFile(at(dbInBackup), database, needOpener(dbInBackup));
    }
    const checked = await checkContents(dir, info, {
      key,
      keyName,
      keySource,
      database,
      dbInBackup,
      manifestName,
      listed,
      entries,
      hashOf,
      objects: options.objects,
    });
    return {
      info,
      entries,
      key,
      keyFromBackup,
      keySource,
      blobs: checked.blobs,
      sealedValues: checked.sealedValues,
      database,
      dispose,
    };
  } catch (err) {
    await dispose();
    throw err;
  }
}

/** Steps 5 and 6 of verifyBackup: the database's contents and the blobs its ledger references. */
async function checkContents(
  dir: string,
  info: BackupInfo,
  c: {
    key: Uint8Array;
    keyName: string;
    keySource: KeySource;
    database: string;
    dbInBackup: string;
    manifestName: string;
    listed: Set<string>;
    entries: readonly ManifestEntry[];
    hashOf: (rel: string) => Promise<{ sha256: string; size: number } | 'not_a_file' | null>;
    objects?: BlobStore | null | undefined;
  },
): Promise<{ blobs: { contentHash: string; size: number }[]; sealedValues: number }> {
  const at = (rel: string) => join(dir, rel);
  const { key, keyName, listed, entries, hashOf } = c;
  const options = { objects: c.objects };
  // The database (SQLite; a PostgreSQL backup's database is the pg_dump file, checked by pg_restore).
  let blobs: { contentHash: string; size: number }[] = [];
  let sealedValues = 0;
  if (info.database === 'sqlite') {
    // Named by the backup's file; opened in the clear (the decrypted copy when encrypted).
    const file = at(c.dbInBackup);
    let reader: SqliteBackupReader;
    try {
      reader = SqliteBackupReader.open(c.database);
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
      if (damage !== null)
        throw new BackupFailure({ file, cause: `is damaged (truncated or changed after the backup): ${damage}` });
      const stamp = reader.schema();
      if (stamp.version === 0) throw new BackupFailure({ file, cause: 'holds no Strongroom schema' });
      const newer = refuseNewerSchema(stamp, buildSchemaVersion());
      if (newer)
        throw new BackupFailure({
          file,
          cause: `has schema version ${stamp.version}, newer than this build's ${buildSchemaVersion().version}; restore it with a newer build`,
        });
      const recorded = reader.keyFingerprint();
      if (recorded !== null && recorded !== info.key_fingerprint) {
        throw new BackupFailure({
          file: keyName,
          cause: "is not the key this database's secrets are sealed under (its deployment record names another)",
        });
      }
      for (const col of SEALED_COLUMNS) {
        const open = col.opener(key);
        for (const row of reader.sealedValues(col.table, col.column, col.context)) {
          sealedValues++;
          if (!(await open(row.sealed, row.context))) {
            throw new BackupFailure({
              file,
              cause: `${col.table}.${col.column} of ${rowNamed(col, row.context)} does not open with ${c.keySource === 'backup' ? SECRET_KEY_FILE + AGE_SUFFIX : keyName}`,
            });
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
    if (blobs.length !== info.blobs)
      throw new BackupFailure({
        file: at(c.manifestName),
        cause: `lists ${blobs.length} blobs; ${BACKUP_INFO_FILE} says ${info.blobs}`,
      });
  }

  // The blobs the ledger references.
  if (info.blob_mode === 'copy') {
    for (const b of blobs) {
      const rel = blobPath(b.contentHash);
      const h = await hashOf(rel);
      if (h === null) throw new BackupFailure({ file: at(rel), cause: 'is referenced by the ledger but missing' });
      if (h === 'not_a_file')
        throw new BackupFailure({ file: at(rel), cause: 'is not a regular file (a symbolic link?)' });
      if (h.sha256 !== b.contentHash)
        throw new BackupFailure({ file: at(rel), cause: `holds bytes whose SHA-256 is ${h.sha256}` });
      if (h.size !== b.size)
        throw new BackupFailure({ file: at(rel), cause: `holds ${h.size} bytes; the ledger says ${b.size}` });
      if (!listed.has(rel))
        throw new BackupFailure({ file: at(rel), cause: 'is referenced by the ledger but not listed in the manifest' });
    }
  } else {
    // Object storage keeps the bytes itself: the backup lists them, and the listing is checked
    // against the ledger in the database copy and against the store (each object there at the
    // size the ledger records; its key is its SHA-256, which the store checked when it was
    // committed). Without the store configured there is nothing to check them against.
    if (!listed.has(OBJECTS_FILE))
      throw new BackupFailure({ file: at(OBJECTS_FILE), cause: 'is not listed in the manifest' });
    const objects = parseObjects(
      await naming(at(OBJECTS_FILE), () => readFile(at(OBJECTS_FILE), 'utf8')),
      at(OBJECTS_FILE),
    );
    if (info.database === 'sqlite') {
      for (const b of blobs) {
        if (objects.get(b.contentHash) !== b.size)
          throw new BackupFailure({
            file: at(OBJECTS_FILE),
            cause: `does not list ${b.contentHash} (${b.size} bytes), which the ledger references`,
          });
      }
    } else {
      blobs = [...objects].map(([contentHash, size]) => ({ contentHash, size }));
    }
    if (options.objects === undefined || options.objects === null) {
      throw new BackupFailure({
        file: at(OBJECTS_FILE),
        cause: 'lists objects in an object store: set SVC_BLOB_URL (and its credentials) to that store to check them',
      });
    }
    for (const [contentHash, size] of objects) {
      const found = await options.objects.stat(contentHash);
      if (found === null)
        throw new BackupFailure({
          file: `object ${contentHash}`,
          cause: 'is listed in the backup but missing from the object store',
        });
      if (found.size !== size)
        throw new BackupFailure({
          file: `object ${contentHash}`,
          cause: `holds ${found.size} bytes in the object store; the backup lists ${size}`,
        });
    }
  }

  return { blobs, sealedValues };
}

async function readInfo(path: string): Promise<BackupInfo> {
  const text = await naming(path, () => readFile(path, 'utf8'));
  let v: Partial<BackupInfo>;
  try {
    v = JSON.parse(text) as Partial<BackupInfo>;
  } catch {
    throw new BackupFailure({ file: path, cause: 'is not JSON' });
  }
  if ((v.format as number | undefined) === 1)
    throw new BackupFailure({
      file: path,
      cause:
        'has format 1: a backup of an older build, whose manifest carries no MAC and whose folder may hold the key in the clear; this build reads format 2 (take a new backup, then destroy that one)',
    });
  if (v.format !== 2)
    throw new BackupFailure({ file: path, cause: `has format ${String(v.format)}; this build reads format 2` });
  if (v.encryption !== 'age-x25519' && v.encryption !== 'age-passphrase' && v.encryption !== 'none')
    throw new BackupFailure({ file: path, cause: 'does not say how the backup is encrypted (encryption)' });
  if (
    (v.database !== 'sqlite' && v.database !== 'postgresql') ||
    typeof v.key_fingerprint !== 'string' ||
    (v.blob_mode !== 'copy' && v.blob_mode !== 'manifest')
  ) {
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
    if (m === null)
      throw new BackupFailure({ file, cause: `holds a line that is not "<sha256> <size>": ${line.slice(0, 80)}` });
    out.set(m[1]!, Number(m[2]));
  }
  return out;
}
