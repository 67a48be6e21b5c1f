import Database from 'better-sqlite3';
import type { SchemaStamp } from '@strongroom/core';
import { databaseSchemaVersion } from './migrate.js';

/**
 * A consistent copy of a live SQLite database, through SQLite itself: `VACUUM INTO` reads the whole
 * database in one read transaction, so the copy is the database as of one commit, whatever the
 * server writes meanwhile (WAL mode lets it go on writing), and it is a single ordinary file (no
 * `-wal` beside it) that opens on its own. Never a file copy: copying `strongroom.db` while its
 * write-ahead log holds commits gives a file without them, or one that does not open.
 *
 * Taken on a read-only connection of its own, so it never writes to the source. The
 * `sqlite3_backup` API (better-sqlite3's `backup()`) was the other choice; it copies pages in steps
 * and starts over whenever another connection writes, which under a steady load may never finish.
 */
export function snapshotSqliteDatabase(source: string, target: string): void {
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare('VACUUM INTO ?').run(target);
  } finally {
    db.close();
  }
}

const IDENT = /^[a-z_][a-z0-9_]*$/;

/** A database copy opened read-only to be checked (verify-backup, restore). */
export class SqliteBackupReader {
  readonly #db: Database.Database;
  private constructor(db: Database.Database) {
    this.#db = db;
  }

  /** Opens the copy; throws (SQLite's own words) when the file is not a database. */
  static open(file: string): SqliteBackupReader {
    return new SqliteBackupReader(new Database(file, { readonly: true, fileMustExist: true }));
  }

  /** SQLite's `quick_check`: null when sound, else its first complaint (a truncated or damaged file). */
  damage(): string | null {
    const rows = this.#db.pragma('quick_check') as { quick_check: string }[];
    const first = rows[0]?.quick_check ?? 'no answer';
    return first === 'ok' ? null : first;
  }

  schema(): SchemaStamp {
    return databaseSchemaVersion(this.#db);
  }

  /** Every blob the ledger knows, with the size it recorded. */
  ledgerBlobs(): { contentHash: string; size: number }[] {
    return this.#db.prepare('SELECT content_hash AS contentHash, size FROM blobs ORDER BY content_hash').all() as {
      contentHash: string;
      size: number;
    }[];
  }

  /** The deployment record's key fingerprint (null before a server ever started on it). */
  keyFingerprint(): string | null {
    const row = this.#db.prepare('SELECT key_fingerprint AS f FROM deployment WHERE id = 1').get() as
      | { f: string }
      | undefined;
    return row?.f ?? null;
  }

  /**
   * The values of one sealed column with the context each was sealed under (its additional data).
   * None from a copy of an older schema that has not the column yet, and none of its rows not yet
   * sealed (null): a server of this build seals those in place when it first starts on the restored
   * copy, as it would have on the original.
   */
  sealedValues(table: string, column: string, context: string): { context: string; sealed: string }[] {
    for (const id of [table, column, context]) if (!IDENT.test(id)) throw new RangeError(`not an identifier: ${id}`);
    const columns = new Set(
      (this.#db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[]).map((c) => c.name),
    );
    if (!columns.has(column) || !columns.has(context)) return [];
    return this.#db
      .prepare(`SELECT ${context} AS context, ${column} AS sealed FROM ${table} WHERE ${column} IS NOT NULL`)
      .all() as { context: string; sealed: string }[];
  }

  close(): void {
    this.#db.close();
  }
}
