/**
 * The naive implementation for `npm run bench -- --peers`: what one would write in an afternoon with
 * jose and one SQL row per session, on the same framework and server adapter as ours. It keeps the
 * guarantees a reader would expect of any auth server (argon2id at our parameters, Ed25519 access
 * tokens, a revoked session refused on its next request, durable writes) and nothing else: no
 * protocol negotiation, validation, throttles, second factor, quota, logs or metrics.
 *
 * - `POST /naive/register` `{email, password}` (setup only).
 * - `POST /naive/login` `{email, password}`: the user row, argon2id, one INSERT, a signed token.
 * - `GET /naive/profile`, Bearer: jose's verify, then one SELECT of the session row.
 * - `POST /naive/refresh` `{session_token}`: one UPDATE ... RETURNING of the session row, a signed token.
 *
 * SQLite in PEER_DIR (WAL, synchronous FULL), or PostgreSQL at PEER_PG_URL (a pool of 10).
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createHash, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { hash, verify } from '@node-rs/argon2';
import { SignJWT, jwtVerify } from 'jose';

const ARGON2 = { algorithm: 2 as never, memoryCost: 19_456, timeCost: 2, parallelism: 1 };
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

interface Store {
  run(sql: string, params: unknown[]): Promise<void>;
  row<T>(sql: string, params: unknown[]): Promise<T | undefined>;
}

async function open(): Promise<Store> {
  const schema = [
    'CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, email TEXT UNIQUE NOT NULL, password_hash TEXT NOT NULL)',
    'CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, token_hash TEXT UNIQUE NOT NULL, revoked INTEGER NOT NULL DEFAULT 0, refreshed_at BIGINT NOT NULL)',
  ];
  if (process.env.PEER_PG_URL) {
    const pool = new pg.Pool({ connectionString: process.env.PEER_PG_URL, max: 10 });
    for (const s of schema) await pool.query(s);
    const numbered = (sql: string) =>
      sql.replace(
        /\?/g,
        (
          (n) => () =>
            `$${++n}`
        )(0),
      );
    return {
      run: async (sql, params) => void (await pool.query(numbered(sql), params)),
      row: async <T>(sql: string, params: unknown[]) =>
        (await pool.query(numbered(sql), params)).rows[0] as T | undefined,
    };
  }
  const db = new Database(join(process.env.PEER_DIR!, 'naive.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  for (const s of schema) db.exec(s);
  const statements = new Map<string, Database.Statement>();
  const prepared = (sql: string) => statements.get(sql) ?? statements.set(sql, db.prepare(sql)).get(sql)!;
  return {
    run: async (sql, params) => void prepared(sql).run(...params),
    row: async <T>(sql: string, params: unknown[]) => prepared(sql).get(...params) as T | undefined,
  };
}

const store = await open();
const sign = (userId: string, sessionId: string) =>
  new SignJWT({ sid: sessionId })
    .setProtectedHeader({ alg: 'EdDSA' })
    .setSubject(userId)
    .setIssuedAt()
    .setExpirationTime('15m')
    .sign(privateKey);

const app = new Hono();
app.post('/naive/register', async (c) => {
  const { email, password } = await c.req.json<{ email: string; password: string }>();
  await store.run('INSERT INTO users (id, email, password_hash) VALUES (?, ?, ?)', [
    randomUUID(),
    email,
    await hash(password, ARGON2),
  ]);
  return c.json({ ok: true });
});
app.post('/naive/login', async (c) => {
  const { email, password } = await c.req.json<{ email: string; password: string }>();
  const user = await store.row<{ id: string; password_hash: string }>(
    'SELECT id, password_hash FROM users WHERE email = ?',
    [email],
  );
  if (!user || !(await verify(user.password_hash, password))) return c.json({ error: 'invalid' }, 401);
  const sessionId = randomUUID();
  const token = randomBytes(32).toString('base64url');
  await store.run('INSERT INTO sessions (id, user_id, token_hash, refreshed_at) VALUES (?, ?, ?, ?)', [
    sessionId,
    user.id,
    sha(token),
    Date.now(),
  ]);
  return c.json({ access_token: await sign(user.id, sessionId), session_token: token });
});
app.get('/naive/profile', async (c) => {
  const bearer = c.req.header('authorization')?.replace(/^Bearer /, '') ?? '';
  try {
    const { payload } = await jwtVerify(bearer, publicKey, { algorithms: ['EdDSA'] });
    const session = await store.row<{ user_id: string }>('SELECT user_id FROM sessions WHERE id = ? AND revoked = 0', [
      payload.sid,
    ]);
    if (!session) return c.json({ error: 'revoked' }, 401);
    return c.json({ user_id: session.user_id });
  } catch {
    return c.json({ error: 'invalid' }, 401);
  }
});
app.post('/naive/refresh', async (c) => {
  const { session_token } = await c.req.json<{ session_token: string }>();
  const session = await store.row<{ id: string; user_id: string }>(
    'UPDATE sessions SET refreshed_at = ? WHERE token_hash = ? AND revoked = 0 RETURNING id, user_id',
    [Date.now(), sha(session_token)],
  );
  if (!session) return c.json({ error: 'invalid' }, 401);
  return c.json({ access_token: await sign(session.user_id, session.id) });
});
serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: '127.0.0.1' });
