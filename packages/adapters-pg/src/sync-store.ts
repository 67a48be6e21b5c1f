import { eq, inArray, sql, type SQL } from 'drizzle-orm';
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
import { filterWhere, sqlStringList } from '@strongroom/sql-common';
import { namedRowsOf, RenderedStatement, rowsOf, type PgDb } from './db.js';
import { links } from './schema/sharing.js';
import { syncChanges, syncHeads } from './schema/sync.js';
import { toLink } from './sharing-store.js';

/**
 * Records `changes` (core's sync/changes.ts) in `accountId`'s log, inside the write's own
 * transaction. Raising the account's head locks its row until the commit, so a second writer of
 * the account takes the next number only after the first committed: the account's sequence
 * numbers commit in order (a global sequence would hand out numbers that commit out of order, and
 * a reader that paged past a gap would never see that write). Call it last in the transaction,
 * after every other row lock: the head row is then the last lock taken, and no lock cycle passes
 * through it.
 */
export async function appendSyncChanges(
  tx: PgDb,
  accountId: string,
  changes: readonly SyncChange[],
  at: number,
): Promise<void> {
  if (changes.length === 0) return;
  const [head] = await tx
    .insert(syncHeads)
    .values({ accountId, seq: changes.length })
    .onConflictDoUpdate({ target: syncHeads.accountId, set: { seq: sql`${syncHeads.seq} + excluded.seq` } })
    .returning({ seq: syncHeads.seq });
  const first = head!.seq - changes.length + 1;
  await tx
    .insert(syncChanges)
    .values(changes.map((c, i) => ({ accountId, kind: c.kind, objectId: c.objectId, op: c.op, seq: first + i, at })))
    .onConflictDoUpdate({
      target: [syncChanges.accountId, syncChanges.kind, syncChanges.objectId],
      set: { op: sql`excluded.op`, seq: sql`excluded.seq`, at: sql`excluded.at` },
    });
}

/** Changes a transaction gathers per account, appended once at its end (see appendSyncChanges on lock order). */
export class PendingSync {
  readonly #byAccount = new Map<string, SyncChange[]>();
  add(accountId: string, changes: readonly SyncChange[]): void {
    if (changes.length === 0) return;
    this.#byAccount.set(accountId, [...(this.#byAccount.get(accountId) ?? []), ...changes]);
  }
  async flush(tx: PgDb, at: number): Promise<void> {
    for (const [accountId, changes] of [...this.#byAccount].sort(([a], [b]) => (a < b ? -1 : 1)))
      await appendSyncChanges(tx, accountId, changes, at);
  }
}

interface AssetViewRow {
  id: string;
  owner_id: string;
  uploader_id: string;
  state: AssetState;
  created_at: string | number;
  trashed_at: string | number | null;
  drop_expires_at: string | number | null;
  album_id: string | null;
  updated_at: string | number | null;
}
interface AlbumViewRow {
  id: string;
  account_id: string;
  protocol_version: string;
  created_at: string | number;
  asset_count: string | number;
}

// The album and the last change are looked up per asset by key (scalar subqueries): as joins, the
// planner hashes the whole upload_sessions and sync_changes tables for a page of 500 assets.
const ASSET_VIEW =
  sql.raw(`SELECT a.id, a.owner_id, a.uploader_id, a.state, a.created_at, a.trashed_at, a.drop_expires_at,
  (SELECT s.album_id FROM upload_sessions s WHERE s.id = a.id) AS album_id,
  (SELECT c.at FROM sync_changes c WHERE c.account_id = a.owner_id AND c.kind = 'asset' AND c.object_id = a.id) AS updated_at FROM assets a`);
const ALBUM_VIEW = sql.raw(`SELECT al.id, al.account_id, al.protocol_version, al.created_at,
  (SELECT count(*) FROM upload_sessions s JOIN assets a ON a.id = s.id WHERE s.album_id = al.id AND a.state IN ${sqlStringList(ALBUM_COUNTED_STATES)}) AS asset_count FROM albums al`);
const num = (v: string | number): number => Number(v);
/** `(v1, v2, …)` as parameters: an IN list drizzle binds one by one. */
const list = (values: readonly string[]): SQL =>
  sql`(${sql.join(
    values.map((v) => sql`${v}`),
    sql`, `,
  )})`;
const numOrNull = (v: string | number | null): number | null => (v === null ? null : Number(v));

/**
 * A page in one statement, so in one snapshot: the account's head, one range of the page index in
 * its order, and by key each entry's asset, the album its original was uploaded into, and its blobs
 * (one row per blob, in the order they were added; an entry whose object is no asset has one row of
 * nulls). It answers one row: the head, and the page's rows as one JSON array of arrays (null with
 * no entry after the cursor). PostgreSQL only encodes the rows; which of them make the page is
 * core's. Why JSON: a page of 500 rows as 500 result rows of 17 columns is 8,500 values node-postgres
 * turns into strings and objects one socket read at a time, and while a page's rows arrive the
 * other pages' requests run, so those half-built rows live through young-generation collections and
 * are copied and promoted to the old generation; as one value, the page arrives as bytes and is
 * parsed in one call once it is whole, its numbers as numbers.
 */
const pageQuery = (account: unknown, after: unknown, limit: unknown): SQL => sql`SELECT h.seq AS head, h.pruned_through,
  (SELECT json_agg(json_build_array(c.kind, c.object_id, c.op, c.seq, c.at, a.owner_id, a.uploader_id, a.state,
      a.created_at, a.trashed_at, a.drop_expires_at, s.album_id, b.kind, b.content_hash, b.size) ORDER BY c.seq, b.seq)
    FROM (SELECT kind, object_id, op, seq, at FROM sync_changes
      WHERE account_id = k.account_id AND seq > ${after}::bigint ORDER BY seq LIMIT ${limit}::int) c
    LEFT JOIN assets a ON c.kind = 'asset' AND a.id = c.object_id
    LEFT JOIN upload_sessions s ON s.id = a.id
    LEFT JOIN asset_blobs b ON b.asset_id = a.id) AS rows
FROM (SELECT ${account}::text AS account_id) k
LEFT JOIN sync_heads h ON h.account_id = k.account_id`;
export const SYNC_PAGE = new RenderedStatement<{ account: string; after: number; limit: number }>(
  pageQuery(sql.placeholder('account'), sql.placeholder('after'), sql.placeholder('limit')),
);
/** One row of a page, in the order of pageQuery's json_build_array. */
type PageRow = [
  kind: SyncEntry['kind'],
  objectId: string,
  op: SyncEntry['op'],
  seq: number,
  at: number,
  ownerId: string | null,
  uploaderId: string,
  state: AssetState,
  createdAt: number,
  trashedAt: number | null,
  dropExpiresAt: number | null,
  albumId: string | null,
  blobKind: AssetBlob['kind'] | null,
  contentHash: string,
  size: number,
];
interface PageResult {
  head: string | number | null;
  pruned_through: string | number | null;
  /** node-postgres parses json; a driver that hands it back as text is parsed here. */
  rows: PageRow[] | string | null;
}

/** A page's rows as its entries and assets, and the album and link ids it names. */
function pageOf(result: PageResult | undefined) {
  const entries: SyncEntry[] = [];
  const assets: SyncAsset[] = [];
  const albumIds: string[] = [];
  const linkIds: string[] = [];
  const raw = result?.rows ?? null;
  const rows: readonly PageRow[] = raw === null ? [] : typeof raw === 'string' ? (JSON.parse(raw) as PageRow[]) : raw;
  let lastSeq = -1;
  let blobs: AssetBlob[] | null = null;
  for (const r of rows) {
    const kind = r[0];
    const objectId = r[1];
    const seq = r[3];
    if (seq !== lastSeq) {
      lastSeq = seq;
      const at = r[4];
      entries.push({ kind, objectId, op: r[2], seq, at });
      if (kind === 'album') albumIds.push(objectId);
      else if (kind === 'link') linkIds.push(objectId);
      blobs = null;
      const ownerId = r[5];
      if (ownerId !== null) {
        blobs = [];
        // The asset's last change is the entry that named it: the log is not read again.
        assets.push({
          id: objectId,
          ownerId,
          uploaderId: r[6],
          state: r[7],
          createdAt: r[8],
          trashedAt: r[9],
          dropExpiresAt: r[10],
          blobs,
          albumId: r[11],
          updatedAt: at,
        });
      }
    }
    const blobKind = r[12];
    if (blobs !== null && blobKind !== null) blobs.push({ kind: blobKind, contentHash: r[13], size: r[14] });
  }
  return {
    entries,
    assets,
    albumIds,
    linkIds,
    head: result?.head == null ? 0 : Number(result.head),
    prunedThrough: result?.pruned_through == null ? 0 : Number(result.pruned_through),
  };
}

/** The sync log and the album and asset views over PostgreSQL; a page's reads share one REPEATABLE READ snapshot. */
export class PgSyncLog implements SyncLog {
  constructor(readonly db: PgDb) {}

  async #views(tx: PgDb, rows: AssetViewRow[]): Promise<SyncAsset[]> {
    if (rows.length === 0) return [];
    const refs = await rowsOf<{
      asset_id: string;
      kind: AssetBlob['kind'];
      content_hash: string;
      size: string | number;
    }>(
      tx,
      sql`SELECT asset_id, kind, content_hash, size FROM asset_blobs WHERE asset_id IN ${list(rows.map((r) => r.id))} ORDER BY seq`,
    );
    return rows.map((r) => ({
      id: r.id,
      ownerId: r.owner_id,
      uploaderId: r.uploader_id,
      state: r.state,
      createdAt: num(r.created_at),
      trashedAt: numOrNull(r.trashed_at),
      dropExpiresAt: numOrNull(r.drop_expires_at),
      blobs: refs
        .filter((b) => b.asset_id === r.id)
        .map((b) => ({ kind: b.kind, contentHash: b.content_hash, size: num(b.size) })),
      albumId: r.album_id,
      updatedAt: num(r.updated_at ?? r.created_at),
    }));
  }
  #album(r: AlbumViewRow): SyncAlbum {
    return {
      id: r.id,
      accountId: r.account_id,
      protocolVersion: r.protocol_version,
      createdAt: num(r.created_at),
      assetCount: num(r.asset_count),
    };
  }
  async #assetsById(tx: PgDb, ids: readonly string[]): Promise<SyncAsset[]> {
    if (ids.length === 0) return [];
    return this.#views(tx, await rowsOf<AssetViewRow>(tx, sql`${ASSET_VIEW} WHERE a.id IN ${list(ids)} ORDER BY a.id`));
  }

  async readSync(accountId: string, after: number, limit: number): Promise<SyncRead> {
    const statement = SYNC_PAGE.with({ account: accountId, after, limit });
    // One statement is one snapshot: a page of assets needs nothing else.
    const page = pageOf((await namedRowsOf<PageResult>(this.db, 'sync_page', statement))[0]);
    if (page.albumIds.length === 0 && page.linkIds.length === 0)
      return {
        entries: page.entries,
        prunedThrough: page.prunedThrough,
        head: page.head,
        assets: page.assets,
        albums: [],
        links: [],
      };
    // Albums and links are read apart: the page again and them, in one REPEATABLE READ snapshot.
    return this.db.transaction(
      async (tx) => {
        const again = pageOf((await rowsOf<PageResult>(tx, pageQuery(accountId, after, limit)))[0]);
        const albums =
          again.albumIds.length === 0
            ? []
            : (await rowsOf<AlbumViewRow>(tx, sql`${ALBUM_VIEW} WHERE al.id IN ${list(again.albumIds)}`)).map((r) =>
                this.#album(r),
              );
        const linkRows: LinkRecord[] =
          again.linkIds.length === 0
            ? []
            : (await tx.select().from(links).where(inArray(links.idHash, again.linkIds))).map(toLink);
        return {
          entries: again.entries,
          prunedThrough: again.prunedThrough,
          head: again.head,
          assets: again.assets,
          albums,
          links: linkRows,
        };
      },
      { isolationLevel: 'repeatable read', accessMode: 'read only' },
    );
  }
  async pruneSyncTombstones(before: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      const gone = await rowsOf<{ account_id: string; seq: string | number }>(
        tx,
        sql`DELETE FROM sync_changes WHERE ${filterWhere(TOMBSTONE_PRUNED, { before })} RETURNING account_id, seq`,
      );
      const highest = new Map<string, number>();
      for (const g of gone) highest.set(g.account_id, Math.max(highest.get(g.account_id) ?? 0, num(g.seq)));
      for (const [accountId, seq] of [...highest].sort(([a], [b]) => (a < b ? -1 : 1))) {
        await tx
          .update(syncHeads)
          .set({ prunedThrough: sql`greatest(${syncHeads.prunedThrough}, ${seq})` })
          .where(eq(syncHeads.accountId, accountId));
      }
      return gone.length;
    });
  }
  async findAssetView(assetId: string): Promise<SyncAsset | null> {
    return (await this.findAssetViews([assetId]))[0] ?? null;
  }
  async findAssetViews(assetIds: readonly string[]): Promise<SyncAsset[]> {
    return this.db.transaction((tx) => this.#assetsById(tx, [...new Set(assetIds)]), {
      isolationLevel: 'repeatable read',
      accessMode: 'read only',
    });
  }
  async listAlbumAssets(
    ownerId: string,
    albumId: string,
    states: readonly string[],
    afterId: string | null,
    limit: number,
  ): Promise<SyncAsset[]> {
    return this.db.transaction(
      async (tx) =>
        this.#views(
          tx,
          await rowsOf<AssetViewRow>(
            tx,
            sql`${ASSET_VIEW} WHERE a.id IN (SELECT s.id FROM upload_sessions s WHERE s.album_id = ${albumId}) AND a.owner_id = ${ownerId} AND a.state IN ${sql.raw(sqlStringList(states))} AND a.id > ${afterId ?? ''} ORDER BY a.id LIMIT ${limit}`,
          ),
        ),
      { isolationLevel: 'repeatable read', accessMode: 'read only' },
    );
  }
  async findAlbumView(albumId: string): Promise<SyncAlbum | null> {
    const [r] = await rowsOf<AlbumViewRow>(this.db, sql`${ALBUM_VIEW} WHERE al.id = ${albumId}`);
    return r ? this.#album(r) : null;
  }
  async listAlbums(accountId: string): Promise<SyncAlbum[]> {
    return (
      await rowsOf<AlbumViewRow>(
        this.db,
        sql`${ALBUM_VIEW} WHERE al.account_id = ${accountId} ORDER BY al.created_at, al.id`,
      )
    ).map((r) => this.#album(r));
  }
}
