import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import type { PgDb } from './db.js';
import { bringSchemaForward } from './migrate.js';

export interface PgDatabaseOptions {
  /** Pool size per process. Several processes share one server: keep the sum under max_connections. */
  readonly maxConnections?: number;
  /**
   * Seconds to wait for a connection. postgres.js waits 30 s by default; an authenticated request
   * waits this long before failing closed when the database is unreachable, so keep it short.
   */
  readonly connectTimeoutS?: number;
  readonly migrationsFolder?: string;
}

export interface OpenPgDatabase {
  readonly db: PgDb;
  /** Ends every pooled connection. */
  close(): Promise<void>;
}

/**
 * Connects to PostgreSQL through postgres.js, brings the schema forward (refusing a newer or failing
 * one, see `bringSchemaForward`), and returns a pooled drizzle database. The pool reconnects by
 * itself: a connection killed under a query fails that query only, and the next query opens a new one.
 *
 * @example
 * const { db, close } = await openPgDatabase('postgres://app@db.internal:5432/strongroom');
 * const store = new PgStore(db);
 */
export async function openPgDatabase(url: string, options: PgDatabaseOptions = {}): Promise<OpenPgDatabase> {
  const common = {
    connect_timeout: options.connectTimeoutS ?? 5,
    onnotice: () => undefined, // "schema already exists, skipping" and the like: not worth a log line
    connection: { application_name: 'strongroom' },
  };
  // Migration runs on a connection of its own: the advisory lock that keeps concurrent starts apart
  // is held by a session, so it needs the same connection from lock to unlock.
  const single = postgres(url, { ...common, max: 1 });
  try {
    const db = drizzle({ client: single });
    await bringSchemaForward(db, (config) => migrate(db, config), options);
  } finally {
    await single.end({ timeout: 5 });
  }
  const client = postgres(url, { ...common, max: options.maxConnections ?? 10 });
  return { db: drizzle({ client }), close: () => client.end({ timeout: 5 }) };
}
