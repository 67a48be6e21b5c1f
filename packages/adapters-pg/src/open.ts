import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import type { PgDb } from './db.js';
import { bringSchemaForward } from './migrate.js';

export interface PgDatabaseOptions {
  /** Pool size per process. Several processes share one server: keep the sum under max_connections. */
  readonly maxConnections?: number;
  /**
   * How long a query waits for a connection before failing. An authenticated request waits this
   * long before failing closed when the database is unreachable, so keep it short.
   */
  readonly connectTimeoutMs?: number;
  readonly migrationsFolder?: string;
  /**
   * False to open an existing deployment only: a database that holds no schema is refused
   * (NoDeploymentError) and neither migrated nor otherwise written. Default true.
   */
  readonly create?: boolean;
  /**
   * How long one statement may take before it is abandoned and its connection dropped. Bounds how
   * long a request can hang on a database that stopped answering without closing the connection
   * (a network partition), so it fails closed instead. Generous: lock waits count too.
   */
  readonly queryTimeoutMs?: number;
  /** Told about connections that died on their own (the pool replaces them). Never gets secrets. */
  readonly onConnectionError?: (error: Error) => void;
  /**
   * What stands between this process and PostgreSQL. `none` (default): every connection is a
   * session of its own. `transaction`: a transaction pooler (PgBouncer's `pool_mode = transaction`)
   * hands each transaction, and each statement outside one, whichever server connection is free, so
   * nothing may rest on session state: see `SessionFreeClient`.
   */
  readonly pooler?: Pooler;
}

/** The kinds of pooler the adapter can work behind (see `PgDatabaseOptions.pooler`). */
export type Pooler = 'none' | 'transaction';

/**
 * Every pooled connection plans its prepared statements once. With PostgreSQL's default (`auto`)
 * a prepared statement is planned again on each execution whenever a plan made for its actual
 * values looks cheaper than the general one, and for the batched session reads it always did: the
 * bench sends one session's id, and a one-element `= ANY($1)` beats the general plan's assumed ten.
 * Planning that three-table join cost several times running it (pg_stat_statements showed it), and
 * the server waited for both; the commit that set this has the figures.
 * Every statement here looks rows up by key or by an indexed range, where the general plan is the
 * one a particular value would get (checked with `npm run bench -- --explain`); an unnamed statement
 * is planned afresh each time either way, only without its values.
 */
export const GENERIC_PLANS = 'SET plan_cache_mode = force_generic_plan';

/**
 * A random page read priced as a cached one, as on SSD or a database that fits in memory (the
 * value PostgreSQL's documentation suggests there). With the default of 4, the general plan of a
 * batched key lookup assumes ten keys and, on a table of a few thousand rows, prefers reading the
 * whole table into a hash to ten index probes: the session read scanned every account and the
 * device lookup every listed device, once per batch (0.36 and 0.25 ms against 0.07 and 0.03 ms
 * with the index, on 1,000 accounts; `plans.test.ts`). Only this pool's connections are set.
 */
export const INDEX_COSTS = 'SET random_page_cost = 1.1';

/** What every pooled connection is set to before it is handed out, in one round trip. */
export const CONNECTION_SETTINGS: readonly string[] = [GENERIC_PLANS, INDEX_COSTS];

/**
 * The settings of CONNECTION_SETTINGS that still matter behind a transaction pooler, scoped to one
 * transaction. The generic-plan setting does not: it governs named statements, and there are none.
 */
export const TRANSACTION_SETTINGS = INDEX_COSTS.replace(/^SET /, 'SET LOCAL ');

/** A BEGIN as drizzle and `namedTransaction` send it (text only, no values, any options after it). */
const BEGIN = /^\s*begin\b/i;

/**
 * A node-postgres client for a connection that is one session only for the length of a
 * transaction. A statement's name is dropped, so it goes out unnamed: a named one is prepared on
 * whichever server connection ran it first and is unknown to the next, and PgBouncer 1.18 (Debian
 * 12) does not carry prepared statements across. Every BEGIN carries the per-transaction settings
 * in the same round trip. Statements outside a transaction run with the database's own settings
 * (docs/postgresql.md, "Behind PgBouncer").
 */
export class SessionFreeClient extends pg.Client {
  // node-postgres's query has many overloads; this sees every call, drops any name and extends a BEGIN.
  // biome-ignore lint/suspicious/noExplicitAny: it forwards every overload of pg.Client.query unchanged
  override query(config: any, values?: any, callback?: any): any {
    if (typeof config === 'string')
      return super.query(isBegin(config, values) ? `${config}; ${TRANSACTION_SETTINGS}` : config, values, callback);
    // A submittable (a cursor, a stream) is node-postgres's own object, passed on as it is.
    if (config === null || typeof config !== 'object' || typeof config.submit === 'function')
      return super.query(config, values, callback);
    const unnamed = { ...config, name: undefined };
    if (typeof unnamed.text === 'string' && isBegin(unnamed.text, unnamed.values ?? values))
      unnamed.text = `${unnamed.text}; ${TRANSACTION_SETTINGS}`;
    return super.query(unnamed, values, callback);
  }
}

/** A BEGIN with no parameters: sent as a simple query, which may carry a second statement. */
function isBegin(text: string, values: unknown): boolean {
  return (values === undefined || (Array.isArray(values) && values.length === 0)) && BEGIN.test(text);
}

export interface OpenPgDatabase {
  readonly db: PgDb;
  /** Ends every pooled connection. */
  close(): Promise<void>;
}

/**
 * Connects to PostgreSQL through node-postgres, brings the schema forward (refusing a newer or
 * failing one, see `bringSchemaForward`), and returns a pooled drizzle database.
 *
 * The pool heals by itself: a connection killed under a query fails that query only (and a
 * transaction on it rolls back in the server), the dead connection is dropped, and the next query
 * opens a new one. (postgres.js was the first choice; its 3.4.9 crashes the process with an
 * uncatchable TypeError in `nextWrite` when a backend is terminated, porsager/postgres#1154/#1208,
 * which the fault tests reproduced.)
 *
 * @example
 * const { db, close } = await openPgDatabase('postgres://app@db.internal:5432/strongroom');
 * const store = new PgStore(db);
 */
export async function openPgDatabase(url: string, options: PgDatabaseOptions = {}): Promise<OpenPgDatabase> {
  const common = {
    connectionString: url,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    application_name: 'strongroom',
    keepAlive: true,
  };
  const onError = options.onConnectionError ?? (() => undefined);
  const pooled = (options.pooler ?? 'none') === 'transaction';
  // Migration runs on a connection of its own: without a pooler the advisory lock that keeps
  // concurrent starts apart is held by the session, so it needs the same connection from lock to
  // unlock; behind one it is held by a transaction around the whole migration (bringSchemaForward).
  const single = pooled ? new SessionFreeClient(common) : new pg.Client(common);
  single.on('error', onError);
  await single.connect();
  try {
    const db = drizzle({ client: single });
    await bringSchemaForward(db, (config) => migrate(db, config), {
      ...options,
      lockScope: pooled ? 'transaction' : 'session',
    });
  } finally {
    await single.end().catch(() => undefined);
  }
  // A timed-out query fails and, through the pool's query path, its connection is discarded.
  const pool = new pg.Pool({
    ...common,
    max: options.maxConnections ?? 10,
    query_timeout: options.queryTimeoutMs ?? 30_000,
    // Behind a pooler a session SET would land on one server connection of many, for whoever
    // comes next: the settings go with each transaction instead (SessionFreeClient).
    ...(pooled
      ? { Client: SessionFreeClient }
      : {
          // Before the pool hands a new connection out (a failure here fails that checkout, and the
          // connection is dropped): see CONNECTION_SETTINGS.
          // eslint-disable-next-line @typescript-eslint/no-misused-promises -- pg-pool awaits it (a rejection fails the checkout); @types/pg still types it void
          onConnect: (client: pg.ClientBase) => client.query(CONNECTION_SETTINGS.join('; ')),
        }),
  });
  // node-postgres emits 'error' for a connection that dies while idle (on the pool) or while checked
  // out between queries (on the client); unheard, either would end the process.
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', onError));
  return { db: drizzle({ client: pool }), close: () => pool.end() };
}
