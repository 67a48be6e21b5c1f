/**
 * The sync floor: the least a page of `GET /v1/sync` can cost on this machine, over the server's
 * own database (SQLite: its file, opened beside the running server; PostgreSQL: the same database).
 * A bare node:http server, no framework, no authentication, no cursor sealing, no rules: one
 * statement per page that reads one range of the account's change log by its (account_id, seq)
 * index and, by key, the same columns the server's page carries (the asset, the album its original
 * was uploaded into, its blobs), serialized to the same JSON body the server answers. On PostgreSQL
 * the statement hands the page's rows back as one JSON array of arrays, as the server's store reads
 * its page (adapters-pg sync-store.ts): the same statement shape and the same parsing, so the floor
 * stays the cheapest way to read that page on this machine, not a cheaper one than the server may use.
 *
 * `GET /floor/sync?account=A&after=N&limit=L`: at most L changes after N; the cursor it answers is
 * the last sequence number, as text. Only asset changes carry a record here (the bench's library
 * holds assets only); a removal answers null, as the server's does.
 *
 * SYNC_FLOOR_DB (the SQLite file) or SYNC_FLOOR_PG_URL.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Database from 'better-sqlite3';
import pg from 'pg';
import { CONNECTION_SETTINGS } from '@strongroom/adapters-pg';

/** The page's columns, in the statement's order. */
const NAMES = [
  'kind',
  'object_id',
  'op',
  'seq',
  'at',
  'owner_id',
  'uploader_id',
  'state',
  'created_at',
  'trashed_at',
  'album_id',
  'blob_kind',
  'content_hash',
  'size',
] as const;
type Column = (typeof NAMES)[number];
/**
 * How a row's column is reached: by name in SQLite's row objects, by position in PostgreSQL's
 * arrays. One process serves one store, so each access site sees one kind of key.
 */
type Keys = Record<Column, string | number>;
type Row = Record<string | number, unknown>;

const COLUMNS = `c.kind, c.object_id, c.op, c.seq, c.at, a.owner_id, a.uploader_id, a.state, a.created_at, a.trashed_at,
     s.album_id, b.kind AS blob_kind, b.content_hash, b.size`;
/** The page's log range, then each entry's asset, album and blobs by key: one statement. */
const FROM = (p: (i: number) => string) =>
  `FROM (SELECT kind, object_id, op, seq, at FROM sync_changes WHERE account_id = ${p(1)} AND seq > ${p(2)} ORDER BY seq LIMIT ${p(3)}) c
   LEFT JOIN assets a ON c.kind = 'asset' AND a.id = c.object_id
   LEFT JOIN upload_sessions s ON s.id = a.id
   LEFT JOIN asset_blobs b ON b.asset_id = a.id`;
/** PostgreSQL: the same rows as one JSON array of arrays, in COLUMNS' order. */
const PG_PAGE = `SELECT json_agg(json_build_array(${COLUMNS.replace(' AS blob_kind', '')}) ORDER BY c.seq, b.seq) AS rows ${FROM((i) => `$${i}`)}`;

type Read = (account: string, after: number, limit: number) => Promise<Row[]> | Row[];
const BY_NAME = Object.fromEntries(NAMES.map((n) => [n, n])) as Keys;
const BY_POSITION = Object.fromEntries(NAMES.map((n, i) => [n, i])) as Keys;

function sqliteRead(file: string): Read {
  const db = new Database(file, { fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  const page = db.prepare(`SELECT ${COLUMNS} ${FROM(() => '?')} ORDER BY c.seq, b.seq`);
  return (account, after, limit) => page.all(account, after, limit) as Row[];
}

function pgRead(url: string): Read {
  // Connections set as the server's are (adapters-pg open.ts): the same plans for the same reads.
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    // eslint-disable-next-line @typescript-eslint/no-misused-promises -- pg-pool awaits it (a rejection fails the checkout); @types/pg still types it void
    onConnect: (client) => client.query(CONNECTION_SETTINGS.join('; ')),
  } as pg.PoolConfig);
  return async (account, after, limit) => {
    const [r] = (
      await pool.query<{ rows: Row[] | null }>({ name: 'sync_floor', text: PG_PAGE, values: [account, after, limit] })
    ).rows;
    return r?.rows ?? [];
  };
}

const iso = (ms: unknown) => new Date(Number(ms)).toISOString();

/** The rows of one page as the server's body: one change per entry, its blobs gathered. */
function body(rows: readonly Row[], k: Keys, limit: number, after: number): string {
  const changes: unknown[] = [];
  let last: { seq: number; blobs: unknown[] | null } | null = null;
  let count = 0;
  for (const r of rows) {
    const seq = Number(r[k.seq]);
    if (last === null || last.seq !== seq) {
      count++;
      if (count > limit) break;
      const live = r[k.owner_id] !== null;
      const blobs: unknown[] | null = live ? [] : null;
      changes.push({
        kind: r[k.kind],
        id: r[k.object_id],
        op: live ? 'upsert' : 'remove',
        record: live
          ? {
              asset_id: r[k.object_id],
              owner_id: r[k.owner_id],
              upload_user_id: r[k.uploader_id],
              album_id: r[k.album_id],
              state: r[k.state],
              created_at: iso(r[k.created_at]),
              updated_at: iso(r[k.at]),
              trashed_at: r[k.trashed_at] === null ? null : iso(r[k.trashed_at]),
              blobs,
            }
          : null,
      });
      last = { seq, blobs };
    }
    if (last.blobs !== null && r[k.blob_kind] !== null)
      last.blobs.push({
        role: r[k.blob_kind],
        kind: r[k.blob_kind],
        content_hash: r[k.content_hash],
        size: Number(r[k.size]),
      });
  }
  return JSON.stringify({
    changes,
    cursor: String(last?.seq ?? after),
    has_more: count > limit,
  });
}

const read = process.env.SYNC_FLOOR_PG_URL
  ? pgRead(process.env.SYNC_FLOOR_PG_URL)
  : sqliteRead(process.env.SYNC_FLOOR_DB ?? 'strongroom.db');
const keys = process.env.SYNC_FLOOR_PG_URL ? BY_POSITION : BY_NAME;

/** Answers one request; it catches its own failures (a 500), so the server may drop its promise. */
async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://floor');
  if (url.pathname !== '/floor/sync') {
    res.writeHead(404).end();
    return;
  }
  const account = url.searchParams.get('account') ?? '';
  const after = Number(url.searchParams.get('after') ?? 0);
  const limit = Number(url.searchParams.get('limit') ?? 500);
  try {
    // One row more than the page: whether more wait (as the server's read of limit + 1 entries).
    const rows = await read(account, after, limit + 1);
    const text = body(rows, keys, limit, after);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  } catch (error) {
    res.writeHead(500).end(String(error));
  }
}

createServer((req, res) => void answer(req, res)).listen(Number(process.env.PORT), '127.0.0.1');
// Exit on SIGTERM through process.exit, so a profiled run (--cpu-prof) writes its profile.
process.on('SIGTERM', () => process.exit(0));
