import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { SQL } from 'drizzle-orm';

/**
 * Any drizzle PostgreSQL database: node-postgres in production, PGlite in tests and on a laptop with
 * no server. Stores are written against this and use only what both drivers share: affected rows
 * are counted through `RETURNING`, never through a driver-specific result field.
 */
// The schema parameter is left open: the stores use the query builder, not the relational API.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type PgDb = PgDatabase<PgQueryResultHKT, any>;

/**
 * Rows of a raw `db.execute`: node-postgres and PGlite hand back an object with `rows`, postgres.js
 * the rows as an array; this reads either. Only for statements the query builder cannot express.
 */
export async function rowsOf<T>(db: PgDb, query: SQL): Promise<T[]> {
  return rowsIn<T>(await db.execute(query));
}

/** The rows of a driver's raw result, in either shape (see rowsOf). */
function rowsIn<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/** The part of drizzle's database and transaction objects that `namedRowsOf` reaches past `execute` for. */
interface PreparingDb {
  readonly dialect: { sqlToQuery(query: SQL): { sql: string; params: unknown[] } };
  readonly session: {
    prepareQuery(query: { sql: string; params: unknown[] }, fields: undefined, name: string, arrayMode: false): { execute(): Promise<unknown> };
  };
}

/**
 * `rowsOf` for a hot raw statement, prepared under `name` on each connection: node-postgres parses
 * it once there and PostgreSQL plans it once (see GENERIC_PLANS in open.ts); `db.execute` sends an
 * unnamed statement, parsed and planned on every call. The text must be the same on every call
 * with that name. drizzle's `execute` has no name to give, so this calls the same
 * `session.prepareQuery` it does, with one.
 */
export async function namedRowsOf<T>(db: PgDb, name: string, query: SQL): Promise<T[]> {
  const d = db as unknown as PreparingDb;
  return rowsIn<T>(await d.session.prepareQuery(d.dialect.sqlToQuery(query), undefined, name, false).execute());
}
