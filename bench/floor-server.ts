/**
 * The floor: what each bench scenario costs on this machine when a request does only what the
 * contract cannot do without, and nothing else. Same framework and server adapter as the bare
 * route, and the server's own pieces for the expensive parts: its JSON body reader, its Ed25519
 * signer, the stores' shared read batch and group commit on SQLite (WAL, synchronous = FULL, as
 * the server), one statement per turn on PostgreSQL. No validation, protocol negotiation, quota
 * or session rules, logs or metrics; an access token is "verified" by one Map lookup, as the
 * server's cache of verified tokens does after a token's first use.
 *
 * - `POST /floor/:parts` `{"session_token"}`: a refresh. It always reads the session by token hash;
 *   parts names what else runs: `read`, `read-sign`, `read-write` (the refresh time, durably) or
 *   `read-write-sign` (the whole floor of a refresh).
 * - `GET /floor/profile`, Bearer: reads the session and its account, answers them.
 * - `POST /floor/upload`, Bearer, any JSON body: reads the session, then durably records an upload
 *   row and adds its size to the account's reserved bytes.
 * - `GET /floor/sync?after=N&limit=L`, Bearer: a sync page, one indexed range read of the
 *   account's change log (account, seq) after N, answered as rows: what a sync page cannot do
 *   without. Account 4's log holds FLOOR_SYNC_ROWS changes (default 1,000, the sync scenarios'
 *   library).
 * - `POST /floor/upload-guarded`: the same, plus the two things the specification and the architecture
 *   add to it: the device's row is read (spec §7.6: a write comes from a listed device), and
 *   the limit is decided outside SQL, as core decides it: the account's row is read under a lock
 *   (FOR UPDATE in a transaction on PostgreSQL; the group commit's turn on SQLite), the size
 *   checked against a hard limit here, then written. What remains between it and the server is
 *   the server's own work.
 *
 * FLOOR_ACCOUNTS accounts (default 1,000), each with one session; access token `floor-at-<i>` is
 * account i's, and the refresh presents account 0's FLOOR_TOKEN. SQLite under FLOOR_DIR, or
 * PostgreSQL at FLOOR_PG_URL (a scratch database: the tables are created there).
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createHash, generateKeyPairSync, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { groupCommitOf, readBatchOf } from '@strongroom/adapters-sqlite';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { CONNECTION_SETTINGS, namedRowsOf, namedTransaction } from '@strongroom/adapters-pg';
import { platformEd25519Signer } from '@strongroom/adapters-node';
import { BATCH_HOLD_MS, loadOf, StatementBatch } from '@strongroom/sql-common';
import { JSON_LIMIT, readLimited } from '../apps/server/src/http/request.js';

const FLOOR_TOKEN = process.env.FLOOR_TOKEN ?? 'floor-session-token';
const ACCOUNTS = Number(process.env.FLOOR_ACCOUNTS ?? 1000);
/** Every floor account's one listed device, as the bench's uploads name it. */
const FLOOR_DEVICE = 'bench';

interface Session {
  id: string;
  account: string;
}
interface Profile extends Session {
  address: string;
  reserved: number;
}
interface FloorStore {
  byTokenHash(hash: Buffer): Promise<Session | undefined>;
  profile(sessionId: string): Promise<Profile | undefined>;
  recordRefresh(sessionId: string, at: number): Promise<void>;
  openUpload(account: string, size: number): Promise<string>;
  deviceAddedAt(account: string, device: string): Promise<number | undefined>;
  /** openUpload, decided here against HARD_LIMIT on the account's row read under its lock; null when refused. */
  openUploadLocked(account: string, size: number): Promise<string | null>;
  /** One range of the account's change log: at most `limit` rows after `after`, in order. */
  syncPage(account: string, after: number, limit: number): Promise<SyncRow[]>;
}
interface SyncRow {
  kind: string;
  object_id: string;
  op: string;
  seq: number;
  at: number;
}
/** The account whose change log is seeded (access token `floor-at-4`), and its size. */
const SYNC_ACCOUNT = 4;
const SYNC_ROWS = Number(process.env.FLOOR_SYNC_ROWS ?? 1000);

/** The guarded upload's hard limit: high enough that no bench run reaches it, checked all the same. */
const HARD_LIMIT = Number.MAX_SAFE_INTEGER;

const hashOf = (token: string) => createHash('sha256').update(token).digest();
const uuid = (kind: number, i: number) => `0190f0f0-000${kind}-7000-8000-${i.toString(16).padStart(12, '0')}`;
const sessionOf = (i: number) => ({
  id: uuid(1, i),
  account: uuid(2, i),
  tokenHash: hashOf(i === 0 ? FLOOR_TOKEN : `floor-session-${i}`),
});

function sqliteFloor(dir: string): FloorStore {
  const db = new Database(join(dir, 'floor.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`CREATE TABLE floor_accounts (id TEXT PRIMARY KEY, address TEXT NOT NULL, reserved INTEGER NOT NULL);
    CREATE TABLE floor_sessions (id TEXT PRIMARY KEY, account TEXT NOT NULL REFERENCES floor_accounts(id), token_hash BLOB NOT NULL UNIQUE, refreshed_at INTEGER NOT NULL);
    CREATE TABLE floor_uploads (id TEXT PRIMARY KEY, account TEXT NOT NULL REFERENCES floor_accounts(id), size INTEGER NOT NULL);
    CREATE TABLE floor_devices (account TEXT NOT NULL REFERENCES floor_accounts(id), device TEXT NOT NULL, added_at INTEGER NOT NULL, PRIMARY KEY (account, device));
    CREATE TABLE floor_changes (account TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, object_id TEXT NOT NULL, op TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (account, seq))`);
  const addChange = db.prepare(`INSERT INTO floor_changes VALUES (?, ?, 'asset', ?, 'upsert', ?)`);
  const addAccount = db.prepare('INSERT INTO floor_accounts VALUES (?, ?, 0)');
  const addSession = db.prepare('INSERT INTO floor_sessions VALUES (?, ?, ?, 0)');
  const addDevice = db.prepare('INSERT INTO floor_devices VALUES (?, ?, 0)');
  db.transaction(() => {
    for (let i = 0; i < ACCOUNTS; i++) {
      const s = sessionOf(i);
      addAccount.run(s.account, `floor-${i}@example.org`);
      addSession.run(s.id, s.account, s.tokenHash);
      addDevice.run(s.account, FLOOR_DEVICE);
    }
    for (let i = 1; i <= SYNC_ROWS; i++) addChange.run(sessionOf(SYNC_ACCOUNT).account, i, uuid(3, i), i);
  })();
  const changes = db.prepare(
    'SELECT kind, object_id, op, seq, at FROM floor_changes WHERE account = ? AND seq > ? ORDER BY seq LIMIT ?',
  );
  const byHash = db.prepare('SELECT id, account FROM floor_sessions WHERE token_hash = ?');
  const profile = db.prepare(
    'SELECT s.id, s.account, a.address, a.reserved FROM floor_sessions s JOIN floor_accounts a ON a.id = s.account WHERE s.id = ?',
  );
  const refresh = db.prepare('UPDATE floor_sessions SET refreshed_at = ? WHERE id = ?');
  const insertUpload = db.prepare('INSERT INTO floor_uploads VALUES (?, ?, ?)');
  const reserve = db.prepare('UPDATE floor_accounts SET reserved = reserved + ? WHERE id = ?');
  const device = db.prepare('SELECT added_at FROM floor_devices WHERE account = ? AND device = ?');
  const reserved = db.prepare('SELECT reserved FROM floor_accounts WHERE id = ?');
  const reads = readBatchOf(db);
  const commits = groupCommitOf(db);
  /** The upload row and the reservation, inside a group commit's turn. */
  const recordUpload = (account: string, size: number) => {
    const id = randomUUID();
    insertUpload.run(id, account, size);
    reserve.run(size, account);
    return id;
  };
  return {
    byTokenHash: (hash) => reads.run(() => byHash.get(hash) as Session | undefined),
    profile: (id) => reads.run(() => profile.get(id) as Profile | undefined),
    recordRefresh: async (id, at) => void (await commits.run(() => refresh.run(at, id))),
    openUpload: (account, size) => commits.run(() => recordUpload(account, size)),
    deviceAddedAt: (account, id) =>
      reads.run(() => (device.get(account, id) as { added_at: number } | undefined)?.added_at),
    // The group commit's turn is SQLite's lock: the read, the decision and the write see no other writer.
    openUploadLocked: (account, size) =>
      commits.run(() =>
        (reserved.get(account) as { reserved: number }).reserved + size > HARD_LIMIT
          ? null
          : recordUpload(account, size),
      ),
    syncPage: (account, after, limit) => reads.run(() => changes.all(account, after, limit) as SyncRow[]),
  };
}

/** Upload rows inserted and their sizes added to their accounts' reservations, in one statement. */
const uploadWrite = (items: readonly { id: string; account: string; size: number }[]) =>
  sql`WITH added AS (INSERT INTO floor_uploads SELECT * FROM unnest(${sql.param(items.map((i) => i.id))}::uuid[], ${sql.param(items.map((i) => i.account))}::uuid[],
                                                                   ${sql.param(items.map((i) => i.size))}::bigint[]) RETURNING account, size)
      UPDATE floor_accounts a SET reserved = a.reserved + t.total FROM (SELECT account, sum(size) AS total FROM added GROUP BY account) t WHERE a.id = t.account`;

async function pgFloor(url: string): Promise<FloorStore> {
  // Connections set as the server's are (adapters-pg open.ts): the same plans for the same reads.
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    // eslint-disable-next-line @typescript-eslint/no-misused-promises -- pg-pool awaits it (a rejection fails the checkout); @types/pg still types it void
    onConnect: (client) => client.query(CONNECTION_SETTINGS.join('; ')),
  } as pg.PoolConfig);
  // The server's statement helpers over the same pool, for the writes it sends the same way.
  const overPool = drizzle({ client: pool });
  await pool.query(`CREATE TABLE floor_accounts (id uuid PRIMARY KEY, address text NOT NULL, reserved bigint NOT NULL);
    CREATE TABLE floor_sessions (id uuid PRIMARY KEY, account uuid NOT NULL REFERENCES floor_accounts(id), token_hash bytea NOT NULL UNIQUE, refreshed_at bigint NOT NULL);
    CREATE TABLE floor_uploads (id uuid PRIMARY KEY, account uuid NOT NULL REFERENCES floor_accounts(id), size bigint NOT NULL);
    CREATE TABLE floor_devices (account uuid NOT NULL REFERENCES floor_accounts(id), device text NOT NULL, added_at bigint NOT NULL, PRIMARY KEY (account, device));
    CREATE TABLE floor_changes (account uuid NOT NULL, seq bigint NOT NULL, kind text NOT NULL, object_id text NOT NULL, op text NOT NULL, at bigint NOT NULL, PRIMARY KEY (account, seq))`);
  const all = Array.from({ length: ACCOUNTS }, (_, i) => sessionOf(i));
  await pool.query(`INSERT INTO floor_accounts SELECT a, 'floor-' || a::text, 0 FROM unnest($1::uuid[]) AS a`, [
    all.map((s) => s.account),
  ]);
  await pool.query(
    'INSERT INTO floor_sessions SELECT s, a, h, 0 FROM unnest($1::uuid[], $2::uuid[], $3::bytea[]) AS t(s, a, h)',
    [all.map((s) => s.id), all.map((s) => s.account), all.map((s) => s.tokenHash)],
  );
  await pool.query(`INSERT INTO floor_devices SELECT a, $2, 0 FROM unnest($1::uuid[]) AS a`, [
    all.map((s) => s.account),
    FLOOR_DEVICE,
  ]);
  await pool.query(
    `INSERT INTO floor_changes SELECT $1, g, 'asset', 'floor-object-' || g, 'upsert', g FROM generate_series(1, $2::int) g`,
    [sessionOf(SYNC_ACCOUNT).account, SYNC_ROWS],
  );
  await pool.query('ANALYZE floor_changes');
  // Each store call of a turn joins one statement, held while the process is busy, as the server's.
  // A write batch runs alone, as the server's do: two in flight would lock the same rows in no set order.
  const batch = <I, O>(exec: (inputs: readonly I[]) => Promise<readonly O[]>, maxInFlight = Infinity) =>
    new StatementBatch<I, O>(exec, { load: loadOf(pool), holdMs: BATCH_HOLD_MS, maxInFlight });
  const byHash = batch<Buffer, Session | undefined>(async (hashes) => {
    const r = await pool.query({
      name: 'floor_by_hash',
      text: 'SELECT id, account, token_hash FROM floor_sessions WHERE token_hash = ANY($1)',
      values: [hashes],
    });
    return hashes.map((h) => r.rows.find((row) => (row.token_hash as Buffer).equals(h)));
  });
  const profile = batch<string, Profile | undefined>(async (ids) => {
    const r = await pool.query({
      name: 'floor_profile',
      text: 'SELECT s.id, s.account, a.address, a.reserved FROM floor_sessions s JOIN floor_accounts a ON a.id = s.account WHERE s.id = ANY($1::uuid[])',
      values: [ids],
    });
    return ids.map((id) => r.rows.find((row) => row.id === id));
  });
  const refresh = batch<{ id: string; at: number }, void>(async (items) => {
    await pool.query({
      name: 'floor_refresh',
      text: 'UPDATE floor_sessions SET refreshed_at = $1 WHERE id = ANY($2::uuid[])',
      values: [Math.max(...items.map((i) => i.at)), items.map((i) => i.id)],
    });
    return items.map(() => undefined);
  }, 1);
  const upload = batch<{ id: string; account: string; size: number }, string>(async (items) => {
    await namedRowsOf(overPool, 'floor_upload', uploadWrite(items));
    return items.map((i) => i.id);
  }, 1);
  const device = batch<{ account: string; device: string }, number | undefined>(async (keys) => {
    const r = await pool.query({
      name: 'floor_device',
      text: 'SELECT account, device, added_at FROM floor_devices WHERE (account, device) IN (SELECT * FROM unnest($1::uuid[], $2::text[]))',
      values: [keys.map((k) => k.account), keys.map((k) => k.device)],
    });
    return keys.map((k) => {
      const found = r.rows.find((row) => row.account === k.account && row.device === k.device);
      return found === undefined ? undefined : Number(found.added_at);
    });
  });
  // BEGIN, the locking read, the write and COMMIT, sent as the server's grouped openings send them
  // (adapters-pg namedTransaction: BEGIN queued ahead of the read, COMMIT behind the write).
  const locked = batch<{ id: string; account: string; size: number }, string | null>(
    (items) =>
      namedTransaction(overPool, async (tx) => {
        const accounts = [...new Set(items.map((i) => i.account))];
        const rows = await tx.named<{ id: string; reserved: string }>(
          'floor_lock',
          sql`SELECT id, reserved FROM floor_accounts WHERE id = ANY(${sql.param(accounts)}::uuid[]) ORDER BY id FOR UPDATE`,
        );
        const reservedNow = new Map(rows.map((r) => [r.id, Number(r.reserved)]));
        const admitted = new Set(
          items.filter((i) => {
            const next = reservedNow.get(i.account)! + i.size;
            if (next > HARD_LIMIT) return false;
            reservedNow.set(i.account, next);
            return true;
          }),
        );
        await tx.namedThenCommit('floor_upload', uploadWrite([...admitted]));
        return items.map((i) => (admitted.has(i) ? i.id : null));
      }),
    1,
  );
  return {
    byTokenHash: (hash) => byHash.run(hash),
    profile: (id) => profile.run(id),
    recordRefresh: (id, at) => refresh.run({ id, at }),
    openUpload: (account, size) => upload.run({ id: randomUUID(), account, size }),
    deviceAddedAt: (account, id) => device.run({ account, device: id }),
    openUploadLocked: (account, size) => locked.run({ id: randomUUID(), account, size }),
    syncPage: async (account, after, limit) =>
      (
        await pool.query({
          name: 'floor_sync',
          text: 'SELECT kind, object_id, op, seq, at FROM floor_changes WHERE account = $1 AND seq > $2 ORDER BY seq LIMIT $3',
          values: [account, after, limit],
        })
      ).rows.map((r) => ({ ...r, seq: Number(r.seq), at: Number(r.at) })),
  };
}

const store = process.env.FLOOR_PG_URL
  ? await pgFloor(process.env.FLOOR_PG_URL)
  : sqliteFloor(process.env.FLOOR_DIR ?? '.');
const signer = platformEd25519Signer();
const jwk = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
const key = { kid: 'floor', seed: jwk.d!, publicKey: jwk.x! };
const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: 'at+jwt', kid: key.kid })).toString('base64url');
/** Access token → session id: what the server's verified-token cache holds. */
const verified = new Map(Array.from({ length: ACCOUNTS }, (_, i) => [`Bearer floor-at-${i}`, sessionOf(i).id]));
const json = async (c: Parameters<typeof readLimited>[0]) =>
  JSON.parse(Buffer.from(await readLimited(c, JSON_LIMIT)).toString());

const app = new Hono();
app.get('/floor/profile', async (c) => {
  const sessionId = verified.get(c.req.header('authorization') ?? '');
  const p = sessionId === undefined ? undefined : await store.profile(sessionId);
  if (p === undefined) return c.json({ error: 'unknown session' }, 401);
  return c.json({ account_id: p.account, address: p.address, reserved: Number(p.reserved) });
});
app.get('/floor/sync', async (c) => {
  const sessionId = verified.get(c.req.header('authorization') ?? '');
  const p = sessionId === undefined ? undefined : await store.profile(sessionId);
  if (p === undefined) return c.json({ error: 'unknown session' }, 401);
  const limit = Number(c.req.query('limit') ?? 500);
  const rows = await store.syncPage(p.account, Number(c.req.query('after') ?? 0), limit + 1);
  const page = rows.slice(0, limit);
  return c.json({
    changes: page,
    cursor: String(page.at(-1)?.seq ?? c.req.query('after') ?? 0),
    has_more: rows.length > limit,
  });
});
app.post('/floor/upload', async (c) => {
  const sessionId = verified.get(c.req.header('authorization') ?? '');
  const body = (await json(c)) as { declared_size: number };
  const p = sessionId === undefined ? undefined : await store.profile(sessionId);
  if (p === undefined) return c.json({ error: 'unknown session' }, 401);
  const id = await store.openUpload(p.account, body.declared_size);
  return c.json({ upload_id: id, declared_size: body.declared_size }, 201);
});
app.post('/floor/upload-guarded', async (c) => {
  const sessionId = verified.get(c.req.header('authorization') ?? '');
  const body = (await json(c)) as { declared_size: number; device_id: string };
  const p = sessionId === undefined ? undefined : await store.profile(sessionId);
  if (p === undefined) return c.json({ error: 'unknown session' }, 401);
  const addedAt = await store.deviceAddedAt(p.account, body.device_id);
  if (addedAt === undefined || addedAt > Date.now()) return c.json({ error: 'unknown device' }, 403);
  const id = await store.openUploadLocked(p.account, body.declared_size);
  if (id === null) return c.json({ error: 'over the hard limit' }, 413);
  return c.json({ upload_id: id, declared_size: body.declared_size }, 201);
});
app.post('/floor/:parts', async (c) => {
  const parts = c.req.param('parts');
  const body = (await json(c)) as { session_token: string };
  const row = await store.byTokenHash(hashOf(body.session_token));
  if (row === undefined) return c.json({ error: 'unknown session' }, 401);
  const now = Date.now();
  if (parts.includes('write')) await store.recordRefresh(row.id, now);
  const iat = Math.floor(now / 1000);
  const claims = Buffer.from(
    JSON.stringify({ sub: row.account, sid: row.id, iat, exp: iat + 900, jti: now.toString(36) }),
  ).toString('base64url');
  const input = `${header}.${claims}`;
  let signature = '';
  if (parts.includes('sign')) {
    const signed = signer.sign(key, Buffer.from(input));
    signature = Buffer.from(signed instanceof Promise ? await signed : signed).toString('base64url');
  }
  return c.json({ access_token: `${input}.${signature}`, token_type: 'Bearer', expires_in: 900 });
});
serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: '127.0.0.1' });
