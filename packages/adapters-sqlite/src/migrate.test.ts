import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NoDeploymentError } from '@strongroom/core';
import { MIGRATIONS_FOLDER, SchemaVersionError, buildSchemaVersion, openSqliteDatabase } from './migrate.js';

const dirs: string[] = [];
const scratch = () => {
  const d = mkdtempSync(join(tmpdir(), 'strongroom-migrate-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const digest = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('openSqliteDatabase', () => {
  it('creates and migrates a fresh file, then reopens it idempotently', () => {
    const file = join(scratch(), 'a.db');
    openSqliteDatabase(file).close();
    const db = openSqliteDatabase(file);
    const n = (db.prepare('SELECT count(*) AS n FROM __drizzle_migrations').get() as { n: number }).n;
    expect(n).toBe(buildSchemaVersion().version);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });

  it('create: false (a command on an existing deployment) refuses a file that is absent or holds no schema, creating and changing nothing', () => {
    const dir = scratch();
    const missing = join(dir, 'missing.db');
    expect(() => openSqliteDatabase(missing, { create: false })).toThrow(NoDeploymentError);
    expect(existsSync(missing)).toBe(false);
    const empty = join(dir, 'empty.db');
    writeFileSync(empty, '');
    expect(() => openSqliteDatabase(empty, { create: false })).toThrow(NoDeploymentError);
    expect(readdirSync(dir).sort()).toEqual(['empty.db']);
    expect(readFileSync(empty).length).toBe(0);
    const real = join(dir, 'real.db');
    openSqliteDatabase(real).close();
    const db = openSqliteDatabase(real, { create: false });
    expect((db.prepare('SELECT count(*) AS n FROM __drizzle_migrations').get() as { n: number }).n).toBe(
      buildSchemaVersion().version,
    );
    db.close();
  });

  it('refuses a database stamped newer than the build, naming both versions, leaving it byte-for-byte untouched', () => {
    const file = join(scratch(), 'newer.db');
    openSqliteDatabase(file).close();
    const raw = new Database(file);
    raw.pragma('journal_mode = DELETE'); // fold the WAL in so the main file is the whole database
    raw
      .prepare('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)')
      .run('from-the-future', Date.parse('2099-01-01'));
    raw.close();
    const before = digest(file);
    const build = buildSchemaVersion().version;
    let error: unknown;
    try {
      openSqliteDatabase(file);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SchemaVersionError);
    expect((error as Error).message).toContain(`database schema version ${build + 1}`);
    expect((error as Error).message).toContain(`schema version ${build}`);
    expect(digest(file)).toBe(before);
  });

  it('rolls back a failing migration whole and refuses to start', () => {
    const folder = join(scratch(), 'migrations');
    cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
    const journalPath = join(folder, 'meta', '_journal.json');
    const journal = JSON.parse(readFileSync(journalPath, 'utf8'));
    const last = journal.entries.at(-1);
    journal.entries.push({ ...last, idx: last.idx + 1, when: last.when + 1, tag: '9999_broken' });
    writeFileSync(journalPath, JSON.stringify(journal));
    writeFileSync(
      join(folder, '9999_broken.sql'),
      'CREATE TABLE half_done (x integer);\n--> statement-breakpoint\nTHIS IS NOT SQL;',
    );
    const file = join(scratch(), 'b.db');
    openSqliteDatabase(file).close();
    expect(() => openSqliteDatabase(file, { migrationsFolder: folder })).toThrow(
      /from schema version \d+ to \d+ failed/,
    );
    const db = new Database(file, { readonly: true });
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'half_done'").get()).toBeUndefined();
    db.close();
  });
});
