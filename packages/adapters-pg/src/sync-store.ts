import { and, eq, gt, inArray, sql, type SQL } from 'drizzle-orm';
import {
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
import { sqlStringList } from '@strongroom/sql-common';
import { rowsOf, type PgDb } from './db.js';
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
/** A page's assets: their last change is the entry that named them, so the log is not read again. */
const PAGE_ASSET_VIEW =
  sql.raw(`SELECT a.id, a.owner_id, a.uploader_id, a.state, a.created_at, a.trashed_at, a.drop_expires_at,
  (SELECT s.album_id FROM upload_sessions s WHERE s.id = a.id) AS album_id, NULL AS updated_at FROM assets a`);
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
    return this.db.transaction(
      async (tx) => {
        // One range of the (account_id, seq) index.
        const entries: SyncEntry[] = await tx
          .select({
            kind: syncChanges.kind,
            objectId: syncChanges.objectId,
            op: syncChanges.op,
            seq: syncChanges.seq,
            at: syncChanges.at,
          })
          .from(syncChanges)
          .where(and(eq(syncChanges.accountId, accountId), gt(syncChanges.seq, after)))
          .orderBy(syncChanges.seq)
          .limit(limit);
        const [head] = await tx
          .select({ seq: syncHeads.seq, prunedThrough: syncHeads.prunedThrough })
          .from(syncHeads)
          .where(eq(syncHeads.accountId, accountId));
        const ids = (kind: string) => entries.filter((e) => e.kind === kind).map((e) => e.objectId);
        const stamps = new Map(entries.filter((e) => e.kind === 'asset').map((e) => [e.objectId, e.at]));
        const assetIds = [...stamps.keys()];
        const rows =
          assetIds.length === 0
            ? []
            : await rowsOf<AssetViewRow>(tx, sql`${PAGE_ASSET_VIEW} WHERE a.id IN ${list(assetIds)} ORDER BY a.id`);
        const assets = await this.#views(
          tx,
          rows.map((r) => ({ ...r, updated_at: stamps.get(r.id) ?? null })),
        );
        const albumIds = ids('album');
        const albums =
          albumIds.length === 0
            ? []
            : (await rowsOf<AlbumViewRow>(tx, sql`${ALBUM_VIEW} WHERE al.id IN ${list(albumIds)}`)).map((r) =>
                this.#album(r),
              );
        const linkIds = ids('link');
        const linkRows: LinkRecord[] =
          linkIds.length === 0 ? [] : (await tx.select().from(links).where(inArray(links.idHash, linkIds))).map(toLink);
        return {
          entries,
          prunedThrough: head?.prunedThrough ?? 0,
          head: head?.seq ?? 0,
          assets,
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
        sql`DELETE FROM sync_changes WHERE op = 'remove' AND at < ${before} RETURNING account_id, seq`,
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
