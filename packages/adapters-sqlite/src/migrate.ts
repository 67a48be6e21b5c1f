import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { chmodSync, closeSync, existsSync, openSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { NoDeploymentError, refuseNewerSchema, type SchemaStamp } from '@strongroom/core';
import { migrationFailed, refuseAbsentSchema, stampOf } from '@strongroom/core/internal';

export { SchemaVersionError } from '@strongroom/core';

/**
 * Found through the package, not next to this file: the compiled server bundles this module into
 * apps/server/dist, where a path relative to the code would point at no migrations.
 */
export const MIGRATIONS_FOLDER = fileURLToPath(
  new URL(
    './drizzle',
    pathToFileURL(createRequire(import.meta.url).resolve('@strongroom/adapters-sqlite/package.json')),
  ),
);

interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

/** This build's schema version: the number of migrations it ships. */
export function buildSchemaVersion(folder = MIGRATIONS_FOLDER): SchemaStamp {
  return stampOf((JSON.parse(readFileSync(`${folder}/meta/_journal.json`, 'utf8')) as Journal).entries);
}

/** The database's version: how many migrations it records, and the newest one's stamp. */
export function databaseSchemaVersion(db: Database.Database): SchemaStamp {
  const table = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'")
    .get();
  if (!table) return { version: 0, latestWhen: 0 };
  const row = db
    .prepare('SELECT count(*) AS n, coalesce(max(created_at), 0) AS latest FROM __drizzle_migrations')
    .get() as { n: number; latest: number };
  return { version: row.n, latestWhen: Number(row.latest) };
}

/**
 * Opens (creating if needed) a SQLite database and brings its schema forward. A database stamped
 * newer than this build is refused before anything is written to it; a failing migration rolls
 * back whole (drizzle runs them in one transaction) and is reported with both versions.
 */
/**
 * The database and its companions readable by the server's user only (0600): they hold password
 * hashes, sessions and sealed secrets. The file is created 0600 before SQLite opens it, because
 * SQLite gives the -wal, -shm and -journal files it creates the database file's permissions; files
 * an earlier build left more open are narrowed in place.
 */
export function restrictDatabaseFiles(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    let mode: number;
    try {
      mode = statSync(f).mode;
    } catch {
      continue;
    }
    if ((mode & 0o077) !== 0) chmodSync(f, 0o600);
  }
}

/**
 * `create: false` opens an existing deployment's database only: a file that is absent or holds no
 * schema is refused (NoDeploymentError) before anything is created or written.
 */
export function openSqliteDatabase(
  file: string,
  options: { migrationsFolder?: string; create?: boolean } = {},
): Database.Database {
  const folder = options.migrationsFolder ?? MIGRATIONS_FOLDER;
  const build = buildSchemaVersion(folder);
  const create = options.create ?? true;
  if (!create && (file === ':memory:' || !existsSync(file))) throw new NoDeploymentError(`${file} does not exist`);
  if (file !== ':memory:') {
    // Look first through a read-only handle, so a too-new file is left byte-for-byte untouched.
    let probe: Database.Database | null = null;
    try {
      probe = new Database(file, { readonly: true, fileMustExist: true });
    } catch {
      probe = null; // does not exist yet: nothing to compare
    }
    if (probe) {
      const current = databaseSchemaVersion(probe);
      probe.close();
      const newer = refuseNewerSchema(current, build);
      if (newer) throw newer;
      const absent = create ? null : refuseAbsentSchema(current);
      if (absent) throw absent;
    }
  }
  if (file !== ':memory:') restrictDatabaseFiles(file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // FULL, not NORMAL: in WAL mode NORMAL survives a crashed process but may lose the last commits
  // on a power cut; FULL syncs the WAL at every commit, so an acknowledged write survives the plug.
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  const before = databaseSchemaVersion(db).version;
  // Foreign keys stay off while migrating: drizzle-kit changes a column by rebuilding its table
  // (create, copy, drop, rename), which SQLite allows only with them off, and a PRAGMA inside the
  // migration's own transaction is ignored. The copy keeps every row, so nothing can dangle; the
  // check after says so before the keys go back on.
  db.pragma('foreign_keys = OFF');
  try {
    migrate(drizzle(db), { migrationsFolder: folder });
    const dangling = db.pragma('foreign_key_check') as unknown[];
    if (dangling.length > 0) throw new Error(`${dangling.length} rows reference missing rows after the migration`);
  } catch (cause) {
    db.close();
    throw migrationFailed(before, build, cause);
  }
  db.pragma('foreign_keys = ON');
  return db;
}
