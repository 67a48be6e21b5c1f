import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type { Hono } from 'hono';
import { afterAll, describe, expect, it } from 'vitest';
import { Argon2Hasher, cryptoRandom, systemClock } from '@strongroom/adapters-node';
import {
  createSqlitePorts,
  MIGRATIONS_FOLDER as SQLITE_MIGRATIONS,
  openSqliteDatabase,
} from '@strongroom/adapters-sqlite';
import { createPgPorts, MIGRATIONS_FOLDER as PG_MIGRATIONS } from '@strongroom/adapters-pg';
import { openUnmigratedTestDatabase } from '@strongroom/adapters-pg/testing';
import { addressKeyOf, sha256Hex, toBase64url, uuidv7 } from '@strongroom/core';
import { MemoryBlobStore, MemoryLogger, TestDevice, TestIdentity } from '@strongroom/core/testing';
import { call, listen, PASSWORD, registerUser } from '@strongroom/tests';
import { createApp } from '../../app.js';
import { readConfig } from '../../config.js';
import { buildDeps, type AppDeps, type Stores } from '../../deps.js';

/**
 * Link ids are bearer capabilities (spec §8.9: reading a share link's blobs, dropping into an
 * owner's album): the database keeps only the SHA-256 of each and a copy sealed under the server
 * key, so a copy of it, or a backup, reaches no link. Checked by reading back every value of every
 * table (and, on SQLite, the bytes of the database files) after the links were used through the
 * API; and by starting this build on a database an earlier build wrote, links in clear in it.
 * Over a SQLite file and PostgreSQL (a scratch database on PG_URL, else PGlite).
 */

const env = { SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc' };
const SEAL = Buffer.from('link-scoped public key').toString('base64url');
const work = mkdtempSync(join(tmpdir(), 'sr-link-ids-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A link id as each form it could be stored in: its text, standard base64, hex, its 16 bytes. */
function forms(id: string): (string | Uint8Array)[] {
  const bytes = new Uint8Array(Buffer.from(id, 'base64url'));
  return [id, Buffer.from(bytes).toString('base64'), Buffer.from(bytes).toString('hex'), bytes];
}

/** Where in `value` any of `needles` appears (empty when nowhere). */
function found(value: unknown, needles: (string | Uint8Array)[]): boolean {
  if (value === null || value === undefined) return false;
  const bytes = value instanceof Uint8Array ? Buffer.from(value) : null;
  const text = bytes
    ? bytes.toString('latin1')
    : typeof value === 'object'
      ? JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? String(v) : v))
      : String(value);
  return needles.some((n) =>
    typeof n === 'string'
      ? text.includes(n) || (bytes?.includes(Buffer.from(n)) ?? false)
      : (bytes?.includes(Buffer.from(n)) ?? false),
  );
}

interface Opened {
  app: Hono;
  deps: AppDeps;
  logger: MemoryLogger;
  /** Every `table.column` (and, on SQLite, database file) holding any of the needles. */
  scan(needles: (string | Uint8Array)[]): Promise<string[]>;
  close(): Promise<void>;
}

/** What an earlier build's schema held, written with that schema's column names. */
type Seed = (exec: (statement: string, params: unknown[]) => Promise<void>) => Promise<void>;

interface Backend {
  /** This build over a fresh database. */
  fresh(): Promise<Opened>;
  /**
   * A database at the schema before link ids were hashed, `seed` written into it, then opened by
   * this build (migrated, started); `reopen` starts this build on it again.
   */
  upgraded(seed: Seed): Promise<{ first: Opened; reopen(): Promise<Opened>; dispose(): Promise<void> }>;
}

/** A copy of the migrations before the one that hashed link ids: the schema an earlier build ran. */
function migrationsBefore(folder: string, tag: string, name: string): string {
  const out = join(work, name);
  mkdirSync(join(out, 'meta'), { recursive: true });
  const journal = JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as {
    entries: { tag: string }[];
  };
  const at = journal.entries.findIndex((e) => e.tag === tag);
  expect(at).toBeGreaterThan(0);
  const entries = journal.entries.slice(0, at);
  for (const e of entries) cpSync(join(folder, `${e.tag}.sql`), join(out, `${e.tag}.sql`));
  writeFileSync(join(out, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries }));
  return out;
}

async function appOver(stores: Stores, scan: Opened['scan'], close: () => Promise<void>): Promise<Opened> {
  const logger = new MemoryLogger();
  const deps = await buildDeps(readConfig(env), stores, {
    clock: systemClock,
    random: cryptoRandom,
    logger,
    hasher: new Argon2Hasher(),
  });
  const app = createApp(deps);
  const served = await listen(app);
  return {
    app,
    deps,
    logger,
    scan,
    close: async () => {
      await served.close();
      await close();
    },
  };
}

function sqliteBackend(): Backend {
  let n = 0;
  const open = async (file: string): Promise<Opened> => {
    const db = openSqliteDatabase(file);
    const scan = async (needles: (string | Uint8Array)[]) => {
      const hits: string[] = [];
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
      for (const { name } of tables) {
        for (const row of db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]) {
          for (const [column, value] of Object.entries(row)) if (found(value, needles)) hits.push(`${name}.${column}`);
        }
      }
      // The files themselves, write-ahead log included: nothing left in a page or a log frame either.
      for (const f of [file, `${file}-wal`]) if (existsSync(f) && found(readFileSync(f), needles)) hits.push(f);
      return [...new Set(hits)];
    };
    return appOver(
      { ...createSqlitePorts(db), blobs: new MemoryBlobStore(), close: async () => void db.close() },
      scan,
      async () => void db.close(),
    );
  };
  return {
    fresh: () => open(join(work, `fresh-${++n}.db`)),
    upgraded: async (seed) => {
      const file = join(work, `upgraded-${++n}.db`);
      const old = openSqliteDatabase(file, {
        migrationsFolder: migrationsBefore(SQLITE_MIGRATIONS, '0007_link_id_hash', `sqlite-before-${n}`),
      });
      await seed(async (statement, params) => void old.prepare(statement.replaceAll(/\$\d+/g, '?')).run(...params));
      old.close();
      return { first: await open(file), reopen: () => open(file), dispose: async () => undefined };
    },
  };
}

/** A result's rows, from node-postgres or PGlite. */
const rowsIn = (result: unknown): Record<string, unknown>[] =>
  Array.isArray(result) ? result : (result as { rows: Record<string, unknown>[] }).rows;

function pgBackend(): Backend {
  const scanOf =
    (db: Awaited<ReturnType<typeof openUnmigratedTestDatabase>>['db'], kind: string) =>
    async (needles: (string | Uint8Array)[]) => {
      const hits: string[] = [];
      const tables = rowsIn(
        await db.execute(sql`SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'`),
      ) as { t: string }[];
      for (const { t } of tables) {
        for (const row of rowsIn(await db.execute(sql.raw(`SELECT * FROM "${t}"`)))) {
          for (const [column, value] of Object.entries(row)) if (found(value, needles)) hits.push(`${t}.${column}`);
        }
      }
      // On a PostgreSQL server, the pages themselves (pageinspect): no row version a move left
      // behind, in the table or in its indexes, still holds an id.
      if (kind === 'postgres') {
        await db.execute(sql`CREATE EXTENSION IF NOT EXISTS pageinspect`);
        const relations = rowsIn(
          await db.execute(
            sql`SELECT c.relname AS r, pg_relation_size(c.oid) / current_setting('block_size')::int AS pages FROM pg_class c WHERE c.relkind IN ('r', 'i') AND c.relnamespace = 'public'::regnamespace AND c.relpersistence = 'p'`,
          ),
        ) as { r: string; pages: number }[];
        for (const { r, pages } of relations) {
          for (let page = 0; page < Number(pages); page++) {
            const [raw] = rowsIn(await db.execute(sql`SELECT get_raw_page(${r}, ${page}) AS p`));
            if (found(raw!['p'], needles)) hits.push(`${r} page ${page}`);
          }
        }
      }
      return [...new Set(hits)];
    };
  // The database outlives the apps opened over it (a second start opens another): the backend closes it.
  const open = (t: Awaited<ReturnType<typeof openUnmigratedTestDatabase>>): Promise<Opened> =>
    appOver(
      { ...createPgPorts(t.db), blobs: new MemoryBlobStore(), close: async () => undefined },
      scanOf(t.db, t.kind),
      async () => undefined,
    );
  let n = 0;
  return {
    fresh: async () => {
      const t = await openUnmigratedTestDatabase();
      await t.migrate();
      const s = await open(t);
      return { ...s, close: () => s.close().then(() => t.close()) };
    },
    upgraded: async (seed) => {
      const t = await openUnmigratedTestDatabase();
      await t.migrate({ migrationsFolder: migrationsBefore(PG_MIGRATIONS, '0007_link_id_hash', `pg-before-${++n}`) });
      await seed(
        async (statement, params) =>
          void (await t.db.execute(
            sql.raw(statement.replaceAll(/\$(\d+)/g, (_m, i: string) => literal(params[Number(i) - 1]))),
          )),
      );
      await t.migrate();
      return { first: await open(t), reopen: () => open(t), dispose: () => t.close() };
    },
  };
}

/** A SQL literal for the seed's few values (test data only). */
const literal = (v: unknown): string =>
  v === null ? 'NULL' : typeof v === 'number' ? String(v) : `'${String(v).replaceAll("'", "''")}'`;

async function ownerWithAlbum(app: Hono): Promise<{ token: string; albumId: string }> {
  const token = (await registerUser(app)).access_token;
  const accountId = (await call(app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  expect((await call(app, 'PUT', '/v1/devices/directory', { token, cbor: dir })).status).toBe(200);
  const albumId = (await call(app, 'POST', '/v1/albums', { token, body: { device_id: 'phone' } })).body
    .album_id as string;
  return { token, albumId };
}

for (const [name, backend] of [
  ['SQLite file', sqliteBackend()],
  ['PostgreSQL', pgBackend()],
] as const) {
  describe(`link ids at rest: ${name}`, { timeout: 60_000 }, () => {
    it('a link id appears nowhere in the database once links are made and used through the API, which answers as before', async () => {
      const s = await backend.fresh();
      try {
        const { token, albumId } = await ownerWithAlbum(s.app);
        const share = await call(s.app, 'POST', '/v1/links', {
          token,
          body: { kind: 'share', album_id: albumId, wrapped_key: 'a2V5' },
        });
        const upload = await call(s.app, 'POST', '/v1/links', {
          token,
          body: { kind: 'upload', album_id: albumId, seal_key: SEAL },
        });
        expect([share.status, upload.status]).toEqual([201, 201]);
        const [shareId, uploadId] = [share.body.link_id as string, upload.body.link_id as string];
        expect(await call(s.app, 'GET', `/v1/links/${shareId}`)).toMatchObject({
          status: 200,
          body: { link_id: shareId, kind: 'share', album_id: albumId },
        });
        expect((await call(s.app, 'POST', `/v1/links/${uploadId}/drops`, { body: { declared_size: 10 } })).status).toBe(
          201,
        );
        expect((await call(s.app, 'GET', `/v1/links/${uploadId}/drops`, { token })).body.drops).toHaveLength(1);
        expect(
          (await call(s.app, 'GET', '/v1/links', { token })).body.links
            .map((l: { link_id: string }) => l.link_id)
            .sort(),
        ).toEqual([shareId, uploadId].sort());
        expect((await call(s.app, 'DELETE', `/v1/links/${uploadId}`, { token })).status).toBe(204);
        expect((await call(s.app, 'GET', `/v1/links/${uploadId}`)).status).toBe(404);

        expect(await s.scan([...forms(shareId), ...forms(uploadId)])).toEqual([]);
        // The scan does find what is there: the links' rows, by their owner's album.
        expect(await s.scan([albumId])).toContain('links.album_id');
      } finally {
        await s.close();
      }
    });

    it('a database an earlier build wrote, links in clear in it: this build moves them at start; each id still works, for guests and owner, and no clear id is left', async () => {
      const now = Date.now();
      const owner = uuidv7(now, new Uint8Array(10).fill(1));
      const address = `old-links-${now}@example.org`;
      const [shareId, uploadId] = [
        toBase64url(new Uint8Array(16).fill(0xa1)),
        toBase64url(new Uint8Array(16).fill(0xb2)),
      ];
      const dropId = uuidv7(now, new Uint8Array(10).fill(2));
      const uploadToken = new Uint8Array(32).fill(0xc3);
      const passwordHash = await new Argon2Hasher().hash(PASSWORD);
      const { first, reopen, dispose } = await backend.upgraded(async (exec) => {
        await exec(
          'INSERT INTO accounts (id, address, address_key, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)',
          [owner, address, addressKeyOf(address), passwordHash, now],
        );
        const link =
          'INSERT INTO links (id, owner_id, kind, album_id, asset_ids, wrapped_key, seal_key, max_bytes, accepted_bytes, created_at) VALUES ($1, $2, $3, NULL, $4, $5, $6, NULL, $7, $8)';
        await exec(link, [shareId, owner, 'share', '[]', 'a2V5', null, 0, now]);
        await exec(link, [uploadId, owner, 'upload', '[]', null, SEAL, 10, now]);
        // A drop still uploading through the upload link: its session and its reservation.
        await exec(
          "INSERT INTO upload_sessions (id, uploader_id, payer_id, kind, declared_size, drop_link_id, state, created_at, expires_at) VALUES ($1, $2, $3, 'original', 10, $4, 'Pending', $5, $6)",
          [dropId, owner, owner, uploadId, now, now + 3_600_000],
        );
        await exec(
          'INSERT INTO link_drops (upload_id, link_id, owner_id, token_hash, declared_size, created_at) VALUES ($1, $2, $3, $4, 10, $5)',
          [dropId, uploadId, owner, sha256Hex(uploadToken), now],
        );
        await exec('INSERT INTO quota_accounts (account_id, reserved, open_uploads) VALUES ($1, 10, 1)', [owner]);
      });
      let second: Opened | undefined;
      try {
        const s = first;
        expect(s.logger.lines.filter((l) => l.event === 'links.sealed_in_place')).toMatchObject([
          { fields: { count: 2 } },
        ]);
        const needles = [...forms(shareId), ...forms(uploadId)];
        expect(await s.scan(needles)).toEqual([]);
        // No log line names an id either.
        expect(JSON.stringify(s.logger.lines)).not.toContain(shareId);
        expect(JSON.stringify(s.logger.lines)).not.toContain(uploadId);

        expect(await call(s.app, 'GET', `/v1/links/${shareId}`)).toMatchObject({
          status: 200,
          body: { link_id: shareId, kind: 'share', wrapped_key: 'a2V5' },
        });
        expect(await call(s.app, 'GET', `/v1/links/${uploadId}`)).toMatchObject({
          status: 200,
          body: { link_id: uploadId, kind: 'upload', seal_key: SEAL },
        });
        const login = await call(s.app, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } });
        expect(login.status).toBe(200);
        const token = login.body.access_token as string;
        expect(
          (await call(s.app, 'GET', '/v1/links', { token })).body.links
            .map((l: { link_id: string }) => l.link_id)
            .sort(),
        ).toEqual([shareId, uploadId].sort());
        expect((await call(s.app, 'GET', `/v1/links/${uploadId}/drops`, { token })).body.drops).toMatchObject([
          { upload_id: dropId, state: 'uploading' },
        ]);
        // The guest's upload token, issued before the move, still admits its drop.
        const guest = {
          headers: { authorization: `Upload ${toBase64url(uploadToken)}` },
          raw: new Uint8Array(10).fill(7) as unknown as BodyInit,
          contentType: 'application/octet-stream',
        };
        expect((await call(s.app, 'PUT', `/upload/${dropId}`, guest)).status).toBe(200);

        // A second start finds nothing left to move, and the links still work.
        second = await reopen();
        expect(second.logger.lines.filter((l) => l.event === 'links.sealed_in_place')).toEqual([]);
        expect((await call(second.app, 'GET', `/v1/links/${shareId}`)).status).toBe(200);
        // Revoking by id reaches the drop through its moved session: cancelled, its reservation released, its token refused.
        expect((await call(second.app, 'DELETE', `/v1/links/${uploadId}`, { token })).status).toBe(204);
        expect((await call(second.app, 'PUT', `/upload/${dropId}`, guest)).status).toBe(401);
        expect((await call(second.app, 'GET', '/quota', { token })).body).toMatchObject({ reserved: 0 });
        expect(await second.scan(needles)).toEqual([]);
      } finally {
        await first.close();
        await second?.close();
        await dispose();
      }
    });
  });
}
