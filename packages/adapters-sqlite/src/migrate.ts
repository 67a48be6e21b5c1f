import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { migrationFailed, refuseNewerSchema, stampOf, type SchemaStamp } from '@strongroom/core';

export { SchemaVersionError } from '@strongroom/core';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../drizzle', import.meta.url));

interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

/** This build's schema version: the number of migrations it ships. */
export function buildSchemaVersion(folder = MIGRATIONS_FOLDER): SchemaStamp {
  return stampOf((JSON.parse(readFileSync(`${folder}/meta/_journal.json`, 'utf8')) as Journal).entries);
}

/** The database's version: how many migrations it records, and the newest one's stamp. */
function databaseSchemaVersion(db: Database.Database): SchemaStamp {
  const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get();
  if (!table) return { version: 0, latestWhen: 0 };
  const row = db.prepare('SELECT count(*) AS n, coalesce(max(created_at), 0) AS latest FROM __drizzle_migrations').get() as { n: number; latest: number };
  return { version: row.n, latestWhen: Number(row.latest) };
}

/**
 * Opens (creating if needed) a SQLite database and brings its schema forward. A database stamped
 * newer than this build is refused before anything is written to it; a failing migration rolls
 * back whole (drizzle runs them in one transaction) and is reported with both versions.
 */
export function openSqliteDatabase(file: string, options: { migrationsFolder?: string } = {}): Database.Database {
  const folder = options.migrationsFolder ?? MIGRATIONS_FOLDER;
  const build = buildSchemaVersion(folder);
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
    }
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // FULL, not NORMAL: in WAL mode NORMAL survives a crashed process but may lose the last commits
  // on a power cut; FULL syncs the WAL at every commit, so an acknowledged write survives the plug.
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  const before = databaseSchemaVersion(db).version;
  try {
    migrate(drizzle(db), { migrationsFolder: folder });
  } catch (cause) {
    db.close();
    throw migrationFailed(before, build, cause);
  }
  return db;
}
