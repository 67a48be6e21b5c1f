import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sql } from 'drizzle-orm';
import { refuseNewerSchema, type SchemaStamp } from '@strongroom/core';
import { migrationFailed, refuseAbsentSchema, stampOf } from '@strongroom/core/internal';

export { SchemaVersionError } from '@strongroom/core';
import { rowsOf, type PgDb } from './db.js';

/**
 * Found through the package, not next to this file: the compiled server bundles this module into
 * apps/server/dist, where a path relative to the code would point at no migrations.
 */
export const MIGRATIONS_FOLDER = fileURLToPath(
  new URL('./drizzle', pathToFileURL(createRequire(import.meta.url).resolve('@strongroom/adapters-pg/package.json'))),
);

/** Where drizzle's migrator records what it applied (its defaults, named so we can read them). */
const MIGRATIONS_SCHEMA = 'drizzle';
const MIGRATIONS_TABLE = '__drizzle_migrations';

/**
 * Serialises migration between server processes starting together over one database: the first
 * migrates, the others wait and then find nothing to do. Any constant works; this one is "strongroom".
 */
const MIGRATION_LOCK = 0x5374726f6e67; // 'Strong'

interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

/** This build's schema version: the number of migrations it ships, and the newest one's stamp. */
export function buildSchemaVersion(folder = MIGRATIONS_FOLDER): SchemaStamp {
  return stampOf((JSON.parse(readFileSync(`${folder}/meta/_journal.json`, 'utf8')) as Journal).entries);
}

/** The database's version, read without creating anything: a fresh database is version 0. */
export async function databaseSchemaVersion(db: PgDb): Promise<SchemaStamp> {
  const [exists] = await rowsOf<{ t: string | null }>(
    db,
    sql`SELECT to_regclass(${`${MIGRATIONS_SCHEMA}.${MIGRATIONS_TABLE}`})::text AS t`,
  );
  if (!exists?.t) return { version: 0, latestWhen: 0 };
  const [row] = await rowsOf<{ n: string | number; latest: string | number }>(
    db,
    sql`SELECT count(*) AS n, coalesce(max(created_at), 0) AS latest FROM ${sql.identifier(MIGRATIONS_SCHEMA)}.${sql.identifier(MIGRATIONS_TABLE)}`,
  );
  return { version: Number(row?.n ?? 0), latestWhen: Number(row?.latest ?? 0) };
}

/**
 * Brings a PostgreSQL schema forward to this build, with the SQLite adapter's refusals: a database
 * stamped newer than the build is refused before anything is written; a failing migration is
 * reported with both versions, and since PostgreSQL DDL is transactional and drizzle applies the
 * pending migrations in one transaction, it leaves the database as it was.
 *
 * `db` must be a single connection (a pool would take the advisory lock on one connection and
 * release it on another); `migrate` is the driver's drizzle migrator bound to that connection.
 * `lockScope: 'transaction'` (behind a transaction pooler) holds the lock by a transaction instead
 * (see `lockedByTransaction`). `create: false` brings an existing deployment forward only: a database that holds no schema is
 * refused (NoDeploymentError) and left as it is.
 */
export async function bringSchemaForward(
  db: PgDb,
  migrate: (config: { migrationsFolder: string; migrationsSchema: string; migrationsTable: string }) => Promise<void>,
  options: { migrationsFolder?: string; create?: boolean; lockScope?: 'session' | 'transaction' } = {},
): Promise<void> {
  const folder = options.migrationsFolder ?? MIGRATIONS_FOLDER;
  const build = buildSchemaVersion(folder);
  if (options.lockScope === 'transaction') {
    await lockedByTransaction(db, () => migrateUnderLock(db, migrate, folder, build, options));
    return;
  }
  await db.execute(sql`SELECT pg_advisory_lock(${MIGRATION_LOCK})`);
  try {
    await migrateUnderLock(db, migrate, folder, build, options);
  } finally {
    await db.execute(sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`).catch(() => undefined);
  }
}

/**
 * Behind a transaction pooler a session lock would stay with whichever server connection took it,
 * and the unlock go to another. Here the lock is a transaction's, opened before the version is read
 * and held to the end: drizzle's migrator opens its own transaction inside this one (PostgreSQL
 * answers that BEGIN with a warning and carries on) and its COMMIT or ROLLBACK ends both, the lock
 * with them; the pooler keeps the server connection for as long as the transaction is open.
 */
async function lockedByTransaction(db: PgDb, body: () => Promise<void>): Promise<void> {
  await db.execute(sql`BEGIN`);
  try {
    await db.execute(sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    await body();
  } finally {
    // Nothing left open when drizzle committed or rolled back; otherwise (nothing to migrate, or a
    // refusal before it) this ends the read-only transaction and its lock.
    await db.execute(sql`COMMIT`).catch(() => undefined);
  }
}

/** Reads the database's version, refuses what `bringSchemaForward` refuses, and migrates; the caller holds the lock. */
async function migrateUnderLock(
  db: PgDb,
  migrate: (config: { migrationsFolder: string; migrationsSchema: string; migrationsTable: string }) => Promise<void>,
  folder: string,
  build: SchemaStamp,
  options: { create?: boolean },
): Promise<void> {
  const current = await databaseSchemaVersion(db);
  const newer = refuseNewerSchema(current, build);
  if (newer) throw newer;
  const absent = options.create === false ? refuseAbsentSchema(current) : null;
  if (absent) throw absent;
  try {
    await migrate({ migrationsFolder: folder, migrationsSchema: MIGRATIONS_SCHEMA, migrationsTable: MIGRATIONS_TABLE });
  } catch (cause) {
    throw migrationFailed(current.version, build, cause);
  }
}
