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
 * nulls). With no entry after the cursor it answers one row, the head's.
 */
const pageQuery = (
  account: unknown,
  after: unknown,
  limit: unknown,
): SQL => sql`SELECT h.seq AS head, h.pruned_through, c.kind, c.object_id, c.op, c.seq, c.at,
  a.owner_id, a.uploader_id, a.state, a.created_at, a.trashed_at, a.drop_expires_at, s.album_id,
  b.kind AS blob_kind, b.content_hash, b.size
FROM (SELECT ${account}::text AS account_id) k
LEFT JOIN sync_heads h ON h.account_id = k.account_id
LEFT JOIN LATERAL (SELECT kind, object_id, op, seq, at FROM sync_changes
  WHERE account_id = k.account_id AND seq > ${after}::bigint ORDER BY seq LIMIT ${limit}::int) c ON true
LEFT JOIN assets a ON c.kind = 'asset' AND a.id = c.object_id
LEFT JOIN upload_sessions s ON s.id = a.id
LEFT JOIN asset_blobs b ON b.asset_id = a.id
ORDER BY c.seq, b.seq`;
export const SYNC_PAGE = new RenderedStatement<{ account: string; after: number; limit: number }>(
  pageQuery(sql.placeholder('account'), sql.placeholder('after'), sql.placeholder('limit')),
);
interface PageRow {
  head: string | null;
  pruned_through: string | null;
  kind: SyncEntry['kind'] | null;
  object_id: string;
  op: SyncEntry['op'];
  seq: string;
  at: string;
  owner_id: string | null;
  uploader_id: string;
  state: AssetState;
  created_at: string;
  trashed_at: string | null;
  drop_expires_at: string | null;
  album_id: string | null;
  blob_kind: AssetBlob['kind'] | null;
  content_hash: string;
  size: string;
}

/** A page's rows as its entries and assets, and the album and link ids it names. */
function pageOf(rows: readonly PageRow[]) {
  const entries: SyncEntry[] = [];
  const assets: SyncAsset[] = [];
  const albumIds: string[] = [];
  const linkIds: string[] = [];
  let lastSeq: string | null = null;
  let blobs: AssetBlob[] | null = null;
  for (const r of rows) {
    if (r.kind === null) continue;
    if (r.seq !== lastSeq) {
      lastSeq = r.seq;
      const at = Number(r.at);
      entries.push({ kind: r.kind, objectId: r.object_id, op: r.op, seq: Number(r.seq), at });
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
          createdAt: Number(r.created_at),
          trashedAt: numOrNull(r.trashed_at),
          dropExpiresAt: numOrNull(r.drop_expires_at),
          blobs,
          albumId: r.album_id,
          updatedAt: at,
        });
      }
    }
    if (blobs !== null && r.blob_kind !== null)
      blobs.push({ kind: r.blob_kind, contentHash: r.content_hash, size: Number(r.size) });
  }
  const head = rows[0];
  return {
    entries,
    assets,
    albumIds,
    linkIds,
    head: head?.head == null ? 0 : Number(head.head),
    prunedThrough: head?.pruned_through == null ? 0 : Number(head.pruned_through),
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
    const page = pageOf(await namedRowsOf<PageRow>(this.db, 'sync_page', statement));
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
        const again = pageOf(await rowsOf<PageRow>(tx, pageQuery(accountId, after, limit)));
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
