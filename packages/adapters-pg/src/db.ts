import { fillPlaceholders, is, SQL, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { PgDialect, type PgDatabase, type PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';

/**
 * Any drizzle PostgreSQL database: node-postgres in production, PGlite in tests and on a laptop with
 * no server. Stores are written against this and use only what both drivers share: affected rows
 * are counted through `RETURNING`, never through a driver-specific result field.
 */
// The schema parameter is left open: the stores use the query builder, not the relational API.
// biome-ignore lint/suspicious/noExplicitAny: the schema parameter is open by design (above)
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

/**
 * node-postgres's pool under a drizzle database, or null (PGlite). `$client` is drizzle's documented
 * way to the driver a database was made over.
 */
function poolOf(db: PgDb): pg.Pool | null {
  const client = (db as { readonly $client?: unknown }).$client;
  return client instanceof pg.Pool ? client : null;
}

/** PostgreSQL's deadlock_detected (40P01), on the error or, through drizzle, on its cause. */
export function isDeadlock(error: unknown): boolean {
  for (
    let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 3;
    e = e.cause as typeof e, depth++
  ) {
    if (e.code === '40P01') return true;
  }
  return false;
}

/**
 * Runs `run` (one whole transaction) again while it fails with an error `retryable` accepts, at
 * most `attempts` times in all: a transaction PostgreSQL chose to break a deadlock, or one that
 * abandoned itself to keep the lock order, was rolled back whole and simply runs again.
 * `mayRestart` is false on the last attempt, which must then see its work through.
 */
export async function retrying<T>(
  attempts: number,
  retryable: (error: unknown) => boolean,
  run: (mayRestart: boolean) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run(attempt < attempts);
    } catch (error) {
      if (attempt >= attempts || !retryable(error)) throw error;
    }
  }
}

/** Turns a drizzle `sql` template into the text and values a driver takes (drizzle's public dialect). */
const dialect = new PgDialect();

/** A statement's text and its values in order, as a driver takes them. */
export interface BoundStatement {
  readonly text: string;
  readonly values: unknown[];
}

/**
 * A raw statement rendered to text once, its values named with `sql.placeholder` and given on each
 * call. For the hottest raw statements: rendering a drizzle `sql` template walks every chunk of it
 * on every call, and for the grouped upload openings that walk cost the server more than the rest of
 * the group's SQL work together.
 */
export class RenderedStatement<V extends Record<string, unknown>> {
  readonly #text: string;
  readonly #params: unknown[];
  constructor(query: SQL) {
    const { sql: text, params } = dialect.sqlToQuery(query);
    this.#text = text;
    this.#params = params;
  }
  with(values: V): BoundStatement {
    return { text: this.#text, values: fillPlaceholders(this.#params, values) };
  }
}

/** A bound statement as a drizzle `sql` template again, for a driver reached through drizzle only (PGlite). */
function asSql(bound: BoundStatement): SQL {
  // The text alternates literal SQL and parameter numbers: "a $1 b $2 c" splits to [a, 1, b, 2, c].
  const parts = bound.text.split(/\$(\d+)/);
  return sql.join(
    parts.map((part, i) => (i % 2 === 0 ? sql.raw(part) : sql`${sql.param(bound.values[Number(part) - 1])}`)),
  );
}

/** Either kind of statement as text and values. */
function toBound(query: SQL | BoundStatement): BoundStatement {
  if (!is(query, SQL)) return query;
  const { sql: text, params } = dialect.sqlToQuery(query);
  return { text, values: params };
}

/** Either kind of statement as drizzle takes it. */
const drizzleSql = (query: SQL | BoundStatement): SQL => (is(query, SQL) ? query : asSql(query));

/** One statement prepared under `name` on `client`'s connection, through node-postgres's named queries. */
async function namedOn<T>(client: pg.Pool | pg.PoolClient, name: string, query: SQL | BoundStatement): Promise<T[]> {
  const { text, values } = toBound(query);
  return (await client.query({ name, text, values })).rows as T[];
}

/**
 * `rowsOf` for a hot raw statement, prepared under `name` on each connection: node-postgres parses
 * it once there and PostgreSQL plans it once (see CONNECTION_SETTINGS in open.ts); `db.execute` sends an
 * unnamed statement, parsed and planned on every call. The text must be the same on every call
 * with that name. drizzle's `execute` has no name to give, so this goes to the driver itself:
 * node-postgres's named query on the pool. PGlite, one connection in this process with nothing to
 * gain from a name, runs it as `rowsOf` does.
 */
export async function namedRowsOf<T>(db: PgDb, name: string, query: SQL | BoundStatement): Promise<T[]> {
  const pool = poolOf(db);
  return pool === null ? rowsOf<T>(db, drizzleSql(query)) : namedOn<T>(pool, name, query);
}

/** One transaction's connection: its named statements, and drizzle over the same transaction. */
export interface NamedTransaction {
  /** `namedRowsOf` inside this transaction. */
  named<T>(name: string, query: SQL | BoundStatement): Promise<T[]>;
  /**
   * The transaction's last statement, with its COMMIT sent right behind it: it answers once both
   * did, and fails if either did (a statement that fails leaves the transaction aborted, and the
   * COMMIT behind it then only rolls back). Nothing may run in the transaction after it.
   */
  namedThenCommit<T>(name: string, query: SQL | BoundStatement): Promise<T[]>;
  /** drizzle over this transaction, for the statements the query builder writes. */
  readonly db: PgDb;
}

/**
 * Runs `body` in one transaction whose hot statements are named (`namedRowsOf`'s reason). On
 * node-postgres it takes a connection from the pool and runs BEGIN, the body and COMMIT on it
 * (ROLLBACK if anything throws, the error passed on), as drizzle's own `transaction` does; a
 * connection that cannot even roll back is dropped from the pool, not reused. On PGlite it is
 * drizzle's `transaction` with unnamed statements.
 *
 * BEGIN and, with `namedThenCommit`, COMMIT are queued next to the statement beside them rather
 * than awaited on their own: node-postgres sends a queued query the moment the one before it is
 * answered, while an awaited one goes out only when this process's event loop comes back to it,
 * which under load is a while. For the grouped upload openings that while was time the payers'
 * rows stayed locked and every other group waited.
 */
export async function namedTransaction<T>(db: PgDb, body: (tx: NamedTransaction) => Promise<T>): Promise<T> {
  const pool = poolOf(db);
  if (pool === null)
    return db.transaction((tx) =>
      body({
        named: (_name, query) => rowsOf(tx, drizzleSql(query)),
        namedThenCommit: (_name, query) => rowsOf(tx, drizzleSql(query)),
        db: tx,
      }),
    );
  const client = await pool.connect();
  let unusable: Error | undefined;
  try {
    // Awaited before any COMMIT: a BEGIN that failed fails the transaction, whatever ran behind it.
    const begun = client.query('BEGIN');
    begun.catch(() => undefined);
    let commitSent = false;
    let over: PgDb | null = null;
    const result = await body({
      named: (name, query) => namedOn(client, name, query),
      namedThenCommit: async <R>(name: string, query: SQL | BoundStatement) => {
        const rows = namedOn<R>(client, name, query);
        const commit = client.query('COMMIT');
        commitSent = true;
        rows.catch(() => undefined);
        commit.catch(() => undefined);
        await begun;
        const answered = await rows;
        // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK, not with an error.
        if ((await commit).command !== 'COMMIT') throw new Error('the transaction was rolled back at COMMIT');
        return answered;
      },
      // Made only when a body needs the query builder (the rare kinds of opening do).
      get db() {
        return (over ??= drizzle({ client }));
      },
    });
    await begun;
    if (!commitSent) await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollback) {
      unusable = rollback instanceof Error ? rollback : new Error(String(rollback));
    }
    throw error;
  } finally {
    client.release(unusable);
  }
}
