import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { rowsOf, type PgDb } from './db.js';
import { NoDeploymentError } from '@strongroom/core';
import { buildSchemaVersion, databaseSchemaVersion, MIGRATIONS_FOLDER, SchemaVersionError } from './migrate.js';
import { openUnmigratedTestDatabase, pgUrlFromEnv, type UnmigratedTestDatabase } from './testing.js';

const opened: UnmigratedTestDatabase[] = [];
async function fresh(): Promise<UnmigratedTestDatabase> {
  const t = await openUnmigratedTestDatabase();
  opened.push(t);
  return t;
}
afterEach(async () => {
  for (const t of opened.splice(0)) await t.close();
});

/** Everything a migration could touch: the public tables with their columns, and the ledger. */
async function snapshot(db: PgDb): Promise<unknown> {
  return {
    columns: await rowsOf(
      db,
      sql`SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns WHERE table_schema IN ('public', 'drizzle') ORDER BY 1, 2, 3`,
    ),
    ledger: await rowsOf(db, sql`SELECT id, hash, created_at::text FROM drizzle.__drizzle_migrations ORDER BY id`),
  };
}

/** A copy of this build's migrations plus one more whose SQL fails halfway through. */
function foldersWithFailingMigration(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sr-pg-migrations-'));
  cpSync(MIGRATIONS_FOLDER, dir, { recursive: true });
  const journalPath = join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as {
    entries: { idx: number; version: string; when: number; tag: string; breakpoints: boolean }[];
  };
  const last = journal.entries[journal.entries.length - 1]!;
  journal.entries.push({
    idx: last.idx + 1,
    version: last.version,
    when: last.when + 1,
    tag: '9999_broken',
    breakpoints: true,
  });
  writeFileSync(journalPath, JSON.stringify(journal));
  writeFileSync(
    join(dir, '9999_broken.sql'),
    'CREATE TABLE "half_done" ("x" integer);\n--> statement-breakpoint\nALTER TABLE "accounts" ADD COLUMN "address" text;',
  );
  return dir;
}

describe('PostgreSQL schema migration', () => {
  const build = buildSchemaVersion();

  it('create: false (a command on an existing deployment) refuses a database with no schema and writes nothing; an existing one opens', async () => {
    const t = await fresh();
    await expect(t.migrate({ create: false })).rejects.toBeInstanceOf(NoDeploymentError);
    expect(await databaseSchemaVersion(t.db)).toEqual({ version: 0, latestWhen: 0 });
    expect(
      await rowsOf(
        t.db,
        sql`SELECT table_name FROM information_schema.tables WHERE table_schema IN ('public', 'drizzle')`,
      ),
    ).toEqual([]);
    await t.migrate();
    await t.migrate({ create: false });
    expect(await databaseSchemaVersion(t.db)).toEqual(build);
  });

  it('brings a fresh database to the build version, and a second start is a no-op', async () => {
    const t = await fresh();
    expect(await databaseSchemaVersion(t.db)).toEqual({ version: 0, latestWhen: 0 });
    await t.migrate();
    expect(await databaseSchemaVersion(t.db)).toEqual(build);
    const before = await snapshot(t.db);
    await t.migrate();
    expect(await snapshot(t.db)).toEqual(before);
  });

  it('refuses a database stamped newer than the build, naming both versions, and changes nothing', async () => {
    const t = await fresh();
    await t.migrate();
    await t.db.execute(
      sql`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('from-a-newer-build', ${build.latestWhen + 1000})`,
    );
    const before = await snapshot(t.db);
    const err = await t.migrate().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SchemaVersionError);
    expect((err as SchemaVersionError).message).toContain(`database schema version ${build.version + 1}`);
    expect((err as SchemaVersionError).message).toContain(`this build's schema version ${build.version}`);
    expect(await snapshot(t.db)).toEqual(before);
  });

  it('refuses a newer stamp even when the migration count matches', async () => {
    const t = await fresh();
    await t.migrate();
    await t.db.execute(
      sql`UPDATE drizzle.__drizzle_migrations SET created_at = created_at + 1000 WHERE id = (SELECT max(id) FROM drizzle.__drizzle_migrations)`,
    );
    const before = await snapshot(t.db);
    await expect(t.migrate()).rejects.toBeInstanceOf(SchemaVersionError);
    expect(await snapshot(t.db)).toEqual(before);
  });

  it('a failing migration stops with both versions named and leaves nothing half-applied', async () => {
    const t = await fresh();
    await t.migrate();
    const before = await snapshot(t.db);
    const folder = foldersWithFailingMigration();
    try {
      const err = await t.migrate({ migrationsFolder: folder }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SchemaVersionError);
      expect(err).toMatchObject({ databaseVersion: build.version, buildVersion: build.version + 1 });
      expect((err as Error).message).toMatch(
        new RegExp(`from schema version ${build.version} to ${build.version + 1} failed`),
      );
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
    expect(await snapshot(t.db)).toEqual(before);
    expect(await rowsOf(t.db, sql`SELECT to_regclass('public.half_done')::text AS t`)).toEqual([{ t: null }]);
  });

  // Needs separate sessions: PGlite has one, on which the advisory lock is re-entrant.
  it.skipIf(pgUrlFromEnv() === null)(
    'several processes starting at once on an empty database migrate it exactly once (needs PG_URL)',
    async () => {
      const t = await fresh();
      await Promise.all([t.migrate(), t.migrate(), t.migrate(), t.migrate()]);
      expect(await databaseSchemaVersion(t.db)).toEqual(build);
    },
  );
});
