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
  const result: unknown = await db.execute(query);
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}
