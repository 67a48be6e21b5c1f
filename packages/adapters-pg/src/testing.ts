import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { connect, createServer, type Server as NetServer, type Socket } from 'node:net';
import pg from 'pg';
import { rowsOf, type PgDb } from './db.js';
import { bringSchemaForward } from './migrate.js';
import { openPgDatabase } from './open.js';

/**
 * Test support for PostgreSQL. With `PG_URL` set (CI, and machines with a local server) tests run
 * against that server, each in a database of its own created here and dropped afterwards; without
 * it, against an in-process PGlite, so a fresh clone's `npm test` still runs every PostgreSQL test.
 */

/** The server tests should use, or null for PGlite. */
export function pgUrlFromEnv(): string | null {
  const url = process.env['PG_URL'];
  return url && url.trim() !== '' ? url.trim() : null;
}

/** One statement on a short-lived connection of its own (CREATE/DROP DATABASE cannot run in a transaction). */
async function adminQuery(serverUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface ScratchDatabase {
  /** Connection URL of the new, empty database on the same server. */
  readonly url: string;
  /** Drops it, closing whatever connections are still open on it. */
  drop(): Promise<void>;
}

/**
 * Creates an empty database on the server behind `serverUrl`. A database rather than a schema,
 * because drizzle-kit's PostgreSQL migrations name `"public"` explicitly in foreign keys.
 */
export async function createScratchDatabase(serverUrl: string, label = 'test'): Promise<ScratchDatabase> {
  const name =
    `sr_${label}_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`.toLowerCase();
  await adminQuery(serverUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}

export interface TestDatabase {
  readonly db: PgDb;
  /** 'postgres' when running against PG_URL, 'pglite' otherwise. */
  readonly kind: 'postgres' | 'pglite';
  /** Empties every application table, so each test starts from a fresh, migrated schema. */
  reset(): Promise<void>;
  /** Every application table's rows, each table sorted, for tests that check a request changed nothing. */
  dump(): Promise<Record<string, unknown[]>>;
  /** Closes it; a scratch database on a server is dropped. */
  close(): Promise<void>;
}

export interface UnmigratedTestDatabase {
  readonly db: PgDb;
  readonly kind: 'postgres' | 'pglite';
  /** Runs `bringSchemaForward` with the driver's migrator on a connection of its own. */
  migrate(options?: { migrationsFolder?: string; create?: boolean }): Promise<void>;
  close(): Promise<void>;
}

/** An empty database, not yet migrated: for tests of the migration rules themselves. */
export async function openUnmigratedTestDatabase(): Promise<UnmigratedTestDatabase> {
  const serverUrl = pgUrlFromEnv();
  if (serverUrl) {
    const scratch = await createScratchDatabase(serverUrl);
    const client = new pg.Pool({ connectionString: scratch.url, max: 4 });
    client.on('error', () => undefined); // a dropped scratch database ends idle connections; not a test failure
    return {
      db: drizzlePg({ client }),
      kind: 'postgres',
      migrate: async (options = {}) => {
        const opened = await openPgDatabase(scratch.url, { ...options, maxConnections: 1 });
        await opened.close();
      },
      close: async () => {
        await client.end();
        await scratch.drop();
      },
    };
  }
  const lite = new PGlite();
  const db = drizzle({ client: lite });
  return {
    db,
    kind: 'pglite',
    migrate: (options = {}) => bringSchemaForward(db, (config) => migrate(db, config), options),
    close: () => lite.close(),
  };
}

/**
 * Deletes every row of every application table, in one transaction: what each test of a contract
 * suite starts from. DELETE, not TRUNCATE: TRUNCATE makes each table's files anew, about 3 ms a
 * table whatever it holds (125 ms for the whole schema, before every test), where deleting the few
 * rows a test wrote takes a millisecond or two. Foreign keys go unchecked meanwhile
 * (`session_replication_role`, for this transaction only): every row goes, so none is left
 * pointing at a deleted one, in whatever order the tables are emptied. Setting it takes a
 * superuser (the test servers' `postgres`, and PGlite's); without one, TRUNCATE.
 */
export async function emptyTables(db: PgDb): Promise<void> {
  const tables = await applicationTables(db);
  if (tables.length === 0) return;
  try {
    await db.transaction(async (tx) => {
      await tx.execute(sql`SET LOCAL session_replication_role = replica`);
      for (const t of tables) await tx.execute(sql.raw(`DELETE FROM ${t}`));
    });
  } catch {
    await db.execute(sql.raw(`TRUNCATE ${tables.join(', ')} CASCADE`));
  }
}

/** The application's tables (the migrated schema's), by name, each quoted for SQL. */
async function applicationTables(db: PgDb): Promise<string[]> {
  const rows = await rowsOf<{ t: string }>(
    db,
    sql`SELECT quote_ident(tablename) AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
  );
  return rows.map((r) => r.t);
}

/** A migrated database for one test file: a scratch database on PG_URL, or an in-memory PGlite. */
export async function openTestDatabase(): Promise<TestDatabase> {
  const raw = await openUnmigratedTestDatabase();
  await raw.migrate();
  const { db } = raw;
  return {
    db,
    kind: raw.kind,
    close: () => raw.close(),
    reset: () => emptyTables(db),
    dump: async () => {
      const out: Record<string, unknown[]> = {};
      for (const t of await applicationTables(db)) {
        const rows = await rowsOf<Record<string, unknown>>(db, sql.raw(`SELECT * FROM ${t}`));
        out[t] = rows.map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))).sort();
      }
      return out;
    },
  };
}

/**
 * A TCP proxy in front of a PostgreSQL server, for fault tests: `down()` resets every connection
 * and refuses new ones (the database is gone), `stall()` keeps connections open but holds back
 * every byte (a network partition), `up()` restores service on the same port.
 */
export class TcpProxy {
  #server: NetServer | null = null;
  readonly #sockets = new Set<Socket>();
  #stalled = false;
  port = 0;
  constructor(
    readonly host: string,
    readonly upstreamPort: number,
  ) {}

  /** The URL `databaseUrl` would have if it went through this proxy. */
  urlFor(databaseUrl: string): string {
    const u = new URL(databaseUrl);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  async up(): Promise<void> {
    this.#stalled = false;
    for (const s of this.#sockets) s.resume(); // a healed partition: what was held back flows on
    if (this.#server) return;
    const server = createServer((client) => {
      const upstream = connect(this.upstreamPort, this.host);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      if (this.#stalled) for (const s of [client, upstream]) s.pause();
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  /** Connections stay open, but nothing passes in either direction until `up()`. */
  stall(): void {
    this.#stalled = true;
    for (const s of this.#sockets) s.pause();
  }

  /** Resets every open connection and refuses new ones. */
  async down(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    for (const s of this.#sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
export { pgbouncerBinary, startPgBouncer, type RunningPgBouncer } from './pgbouncer-harness.js';
