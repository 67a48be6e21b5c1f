import type Database from 'better-sqlite3';
import { inArray } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  TOMBSTONE_PRUNED,
  ALBUM_COUNTED_STATES,
  type AssetBlob,
  type AssetState,
  type LinkRecord,
  type SyncAlbum,
  type SyncAsset,
  type SyncChange,
  type SyncEntry,
  type SyncLog,
  type SyncRead,
} from '@strongroom/core';
import { filterSql, sqlStringList } from '@strongroom/sql-common';
import * as schema from './schema/index.js';
import { links } from './schema/index.js';
import { toLink } from './sharing-store.js';

type Statement = Database.Statement;
interface Appender {
  readonly bump: Statement;
  readonly put: Statement;
}
const appenders = new WeakMap<Database.Database, Appender>();

/**
 * Records `changes` (core's sync/changes.ts) in `accountId`'s log. Call it inside the write's own
 * transaction: raising the account's head takes SQLite's write lock, held to the commit, so the
 * account's sequence numbers commit in order.
 */
export function appendSyncChanges(
  sqlite: Database.Database,
  accountId: string,
  changes: readonly SyncChange[],
  at: number,
): void {
  if (changes.length === 0) return;
  let a = appenders.get(sqlite);
  if (a === undefined) {
    a = {
      bump: sqlite.prepare(
        'INSERT INTO sync_heads (account_id, seq) VALUES (?, ?) ON CONFLICT (account_id) DO UPDATE SET seq = seq + excluded.seq RETURNING seq',
      ),
      put: sqlite.prepare(
        'INSERT INTO sync_changes (account_id, kind, object_id, op, seq, at) VALUES (?, ?, ?, ?, ?, ?) ' +
          'ON CONFLICT (account_id, kind, object_id) DO UPDATE SET op = excluded.op, seq = excluded.seq, at = excluded.at',
      ),
    };
    appenders.set(sqlite, a);
  }
  const last = (a.bump.get(accountId, changes.length) as { seq: number }).seq;
  changes.forEach((c, i) => a.put.run(accountId, c.kind, c.objectId, c.op, last - changes.length + 1 + i, at));
}

interface AssetViewRow {
  id: string;
  owner_id: string;
  uploader_id: string;
  state: AssetState;
  created_at: number;
  trashed_at: number | null;
  drop_expires_at: number | null;
  album_id: string | null;
  updated_at: number | null;
}

const ASSET_VIEW = `SELECT a.*, s.album_id AS album_id, c.at AS updated_at FROM assets a
  LEFT JOIN upload_sessions s ON s.id = a.id
  LEFT JOIN sync_changes c ON c.account_id = a.owner_id AND c.kind = 'asset' AND c.object_id = a.id`;
const COUNTED = sqlStringList(ALBUM_COUNTED_STATES);
/**
 * A page in one statement: one range of the (account_id, seq) index, read in its order, and by key
 * each entry's asset, the album its original was uploaded into, and its blobs (one row per blob, in
 * the order they were added; an entry whose object is no asset has one row of nulls).
 */
export const SYNC_PAGE_SQL = `SELECT c.kind, c.object_id, c.op, c.seq, c.at,
  a.owner_id, a.uploader_id, a.state, a.created_at, a.trashed_at, a.drop_expires_at, s.album_id,
  b.kind AS blob_kind, b.content_hash, b.size
FROM (SELECT kind, object_id, op, seq, at FROM sync_changes WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?) c
LEFT JOIN assets a ON c.kind = 'asset' AND a.id = c.object_id
LEFT JOIN upload_sessions s ON s.id = a.id
LEFT JOIN asset_blobs b ON b.asset_id = a.id
ORDER BY c.seq, b.seq`;
/** A row of SYNC_PAGE_SQL. */
interface PageRow {
  kind: SyncEntry['kind'];
  object_id: string;
  op: SyncEntry['op'];
  seq: number;
  at: number;
  owner_id: string | null;
  uploader_id: string;
  state: AssetState;
  created_at: number;
  trashed_at: number | null;
  drop_expires_at: number | null;
  album_id: string | null;
  blob_kind: AssetBlob['kind'] | null;
  content_hash: string;
  size: number;
}
const ALBUM_VIEW = `SELECT al.id, al.account_id, al.protocol_version, al.created_at,
  (SELECT count(*) FROM upload_sessions s JOIN assets a ON a.id = s.id WHERE s.album_id = al.id AND a.state IN ${COUNTED}) AS asset_count FROM albums al`;

const marks = (n: number): string => Array.from({ length: n }, () => '?').join(', ');
/** One prepared statement per count of parameters, made on first use (a page holds at most 1,001 ids). */
function byCount(make: (n: number) => Database.Statement): (n: number) => Database.Statement {
  const made = new Map<number, Database.Statement>();
  return (n) => {
    let s = made.get(n);
    if (s === undefined) {
      s = make(n);
      made.set(n, s);
    }
    return s;
  };
}

/** The sync log and the album and asset views over SQLite; reads run in one transaction (one snapshot). */
export class SqliteSyncLog implements SyncLog {
  readonly #db: BetterSQLite3Database<typeof schema>;
  readonly #s;

  constructor(readonly sqlite: Database.Database) {
    this.#db = drizzle(sqlite, { schema });
    const p = (text: string) => sqlite.prepare(text);
    this.#s = {
      page: p(SYNC_PAGE_SQL),
      head: p('SELECT seq, pruned_through FROM sync_heads WHERE account_id = ?'),
      // A page's assets and their blobs in one statement each: `IN (?, …)` searches each key by its index.
      assets: byCount((n) => p(`${ASSET_VIEW} WHERE a.id IN (${marks(n)}) ORDER BY a.id`)),
      blobs: byCount((n) =>
        p(`SELECT asset_id, kind, content_hash, size FROM asset_blobs WHERE asset_id IN (${marks(n)}) ORDER BY seq`),
      ),
      albumAssets: (states: readonly string[]) =>
        p(
          `${ASSET_VIEW} WHERE s.album_id = ? AND a.owner_id = ? AND a.state IN ${sqlStringList(states)} AND a.id > ? ORDER BY a.id LIMIT ?`,
        ),
      album: p(`${ALBUM_VIEW} WHERE al.id = ?`),
      albums: p(`${ALBUM_VIEW} WHERE al.account_id = ? ORDER BY al.created_at, al.id`),
      tombstones: p(`DELETE FROM sync_changes WHERE ${filterSql(TOMBSTONE_PRUNED)} RETURNING account_id, seq`),
      raisePruned: p('UPDATE sync_heads SET pruned_through = max(pruned_through, ?) WHERE account_id = ?'),
    };
  }

  /** Those of `ids` that exist, in id order. */
  #assets(ids: readonly string[]): SyncAsset[] {
    return ids.length === 0 ? [] : this.#views(this.#s.assets(ids.length).all(...ids) as AssetViewRow[]);
  }
  #views(rows: readonly AssetViewRow[]): SyncAsset[] {
    if (rows.length === 0) return [];
    const refs = this.#s.blobs(rows.length).all(...rows.map((r) => r.id)) as {
      asset_id: string;
      kind: AssetBlob['kind'];
      content_hash: string;
      size: number;
    }[];
    const byAsset = new Map<string, AssetBlob[]>();
    for (const b of refs)
      byAsset.set(b.asset_id, [
        ...(byAsset.get(b.asset_id) ?? []),
        { kind: b.kind, contentHash: b.content_hash, size: b.size },
      ]);
    return rows.map((r) => this.#view(r, byAsset.get(r.id) ?? []));
  }
  #view(r: AssetViewRow, blobs: AssetBlob[]): SyncAsset {
    return {
      id: r.id,
      ownerId: r.owner_id,
      uploaderId: r.uploader_id,
      state: r.state,
      createdAt: r.created_at,
      trashedAt: r.trashed_at,
      dropExpiresAt: r.drop_expires_at,
      blobs,
      albumId: r.album_id,
      updatedAt: r.updated_at ?? r.created_at,
    };
  }
  #album(
    r:
      | { id: string; account_id: string; protocol_version: string; created_at: number; asset_count: number }
      | undefined,
  ): SyncAlbum | null {
    return r
      ? {
          id: r.id,
          accountId: r.account_id,
          protocolVersion: r.protocol_version,
          createdAt: r.created_at,
          assetCount: r.asset_count,
        }
      : null;
  }

  async readSync(accountId: string, after: number, limit: number): Promise<SyncRead> {
    return this.sqlite.transaction((): SyncRead => {
      const rows = this.#s.page.all(accountId, after, limit) as PageRow[];
      const head = this.#s.head.get(accountId) as { seq: number; pruned_through: number } | undefined;
      const entries: SyncEntry[] = [];
      const assets: SyncAsset[] = [];
      const albumIds: string[] = [];
      const linkIds: string[] = [];
      let blobs: AssetBlob[] | null = null;
      for (const r of rows) {
        if (entries.length === 0 || entries[entries.length - 1]!.seq !== r.seq) {
          entries.push({ kind: r.kind, objectId: r.object_id, op: r.op, seq: r.seq, at: r.at });
          if (r.kind === 'album') albumIds.push(r.object_id);
          else if (r.kind === 'link') linkIds.push(r.object_id);
          blobs = null;
          if (r.owner_id !== null) {
            blobs = [];
            // The asset's last change is the entry that named it: the log is not read again.
            assets.push({
              id: r.object_id,
              ownerId: r.owner_id,
              uploaderId: r.uploader_id,
              state: r.state,
              createdAt: r.created_at,
              trashedAt: r.trashed_at,
              dropExpiresAt: r.drop_expires_at,
              blobs,
              albumId: r.album_id,
              updatedAt: r.at,
            });
          }
        }
        if (blobs !== null && r.blob_kind !== null)
          blobs.push({ kind: r.blob_kind, contentHash: r.content_hash, size: r.size });
      }
      const albums = albumIds.flatMap((id) => this.#album(this.#s.album.get(id) as never) ?? []);
      const linkRows: LinkRecord[] =
        linkIds.length === 0
          ? []
          : this.#db.select().from(links).where(inArray(links.idHash, linkIds)).all().map(toLink);
      return {
        entries,
        prunedThrough: head?.pruned_through ?? 0,
        head: head?.seq ?? 0,
        assets,
        albums,
        links: linkRows,
      };
    })();
  }
  async pruneSyncTombstones(before: number): Promise<number> {
    return this.sqlite
      .transaction(() => {
        const gone = this.#s.tombstones.all(before) as { account_id: string; seq: number }[];
        const highest = new Map<string, number>();
        for (const g of gone) highest.set(g.account_id, Math.max(highest.get(g.account_id) ?? 0, g.seq));
        for (const [accountId, seq] of highest) this.#s.raisePruned.run(seq, accountId);
        return gone.length;
      })
      .immediate();
  }
  async findAssetView(assetId: string): Promise<SyncAsset | null> {
    return this.sqlite.transaction(() => this.#assets([assetId])[0] ?? null)();
  }
  async findAssetViews(assetIds: readonly string[]): Promise<SyncAsset[]> {
    return this.sqlite.transaction(() => this.#assets([...new Set(assetIds)]))();
  }
  async listAlbumAssets(
    ownerId: string,
    albumId: string,
    states: readonly string[],
    afterId: string | null,
    limit: number,
  ): Promise<SyncAsset[]> {
    return this.sqlite.transaction(() =>
      this.#views(this.#s.albumAssets(states).all(albumId, ownerId, afterId ?? '', limit) as AssetViewRow[]),
    )();
  }
  async findAlbumView(albumId: string): Promise<SyncAlbum | null> {
    return this.#album(this.#s.album.get(albumId) as never);
  }
  async listAlbums(accountId: string): Promise<SyncAlbum[]> {
    return (this.#s.albums.all(accountId) as never[]).map((r) => this.#album(r)!);
  }
}
