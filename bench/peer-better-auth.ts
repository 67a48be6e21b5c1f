/**
 * better-auth, as its documentation sets it up, for `npm run bench -- --peers`: email and password
 * sign-in, `getSession` (GET /api/auth/get-session with the session cookie; its cookie cache is off
 * by default, so every read goes to the database and a revoked session is refused at once, as
 * ours), and the JWT plugin's GET /api/auth/token (a signed access token for the session: the
 * nearest thing it has to our refresh). Served by the same framework and server adapter as ours
 * (Hono on @hono/node-server).
 *
 * Its own adapters: better-sqlite3 in PEER_DIR (WAL, synchronous FULL: durable like ours), or
 * PostgreSQL (a node-postgres pool) at PEER_PG_URL. Its rate limiter is off, as ours has none on
 * these routes (the bench would otherwise measure 429s), and so is its telemetry (no network).
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import Database from 'better-sqlite3';
import pg from 'pg';
import { join } from 'node:path';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { jwt } from 'better-auth/plugins/jwt';

const port = Number(process.env.PORT);
const baseURL = `http://127.0.0.1:${port}`;

function database(): Database.Database | pg.Pool {
  if (process.env.PEER_PG_URL) return new pg.Pool({ connectionString: process.env.PEER_PG_URL, max: 10 });
  const db = new Database(join(process.env.PEER_DIR!, 'better-auth.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  return db;
}

const options = {
  baseURL,
  secret: 'bench-secret-bench-secret-bench-secret-0123456789',
  database: database(),
  emailAndPassword: { enabled: true },
  rateLimit: { enabled: false },
  telemetry: { enabled: false },
  plugins: [jwt()],
};
const auth = betterAuth(options);
const { runMigrations } = await getMigrations(auth.options);
await runMigrations();

const app = new Hono();
app.on(['GET', 'POST'], '/api/auth/*', (c) => auth.handler(c.req.raw));
serve({ fetch: app.fetch, port, hostname: '127.0.0.1' });
