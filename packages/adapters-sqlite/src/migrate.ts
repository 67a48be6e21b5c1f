import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../drizzle', import.meta.url));

interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

/** Raised when the schema cannot be brought to this build's version; the server must not start. */
export class SchemaVersionError extends Error {
  override readonly name = 'SchemaVersionError';
  constructor(
    message: string,
    readonly databaseVersion: number,
    readonly buildVersion: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** This build's schema version: the number of migrations it ships. */
export function buildSchemaVersion(folder = MIGRATIONS_FOLDER): { version: number; latestWhen: number } {
  const journal = JSON.parse(readFileSync(`${folder}/meta/_journal.json`, 'utf8')) as Journal;
  return { version: journal.entries.length, latestWhen: Math.max(0, ...journal.entries.map((e) => e.when)) };
}

/** The database's version: how many migrations it records, and the newest one's stamp. */
function databaseSchemaVersion(db: Database.Database): { version: number; latestWhen: number } {
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
      if (current.version > build.version || current.latestWhen > build.latestWhen) {
        throw new SchemaVersionError(
          `database schema version ${current.version} is newer than this build's schema version ${build.version}; ` +
            'update the server. The database was not changed.',
          current.version,
          build.version,
        );
      }
    }
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  const before = databaseSchemaVersion(db).version;
  try {
    migrate(drizzle(db), { migrationsFolder: folder });
  } catch (cause) {
    db.close();
    throw new SchemaVersionError(
      `migrating the database from schema version ${before} to ${build.version} failed; nothing was changed: ${(cause as Error).message}`,
      before,
      build.version,
      { cause },
    );
  }
  return db;
}
