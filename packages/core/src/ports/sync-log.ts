import type { AssetRecord } from './asset-catalog.js';
import type { LinkRecord } from './link-store.js';

export type SyncKind = 'album' | 'asset' | 'link';
export type SyncOp = 'upsert' | 'remove';

/**
 * What one write did to one object of an account, as core's sync rules (sync/changes.ts) name it.
 * A link's `objectId` is its id hash (the store never holds its clear id); albums and assets, their id.
 */
export interface SyncChange {
  readonly kind: SyncKind;
  readonly objectId: string;
  readonly op: SyncOp;
}

/** The latest change of one object: the account's change log keeps one per object, under the sequence number of the write that made it. */
export interface SyncEntry extends SyncChange {
  /** The account's change sequence: assigned in the write's own transaction, so sequence order is commit order. */
  readonly seq: number;
  readonly at: number;
}

/** An asset as a client syncs it: the record, the album its original lies in, and when it last changed. */
export interface SyncAsset extends AssetRecord {
  readonly albumId: string | null;
  /** The instant of the asset's latest change (its creation when it never changed). */
  readonly updatedAt: number;
}

/** An album as a client lists it. */
export interface SyncAlbum {
  readonly id: string;
  readonly accountId: string;
  readonly protocolVersion: string;
  readonly createdAt: number;
  /** The album's assets in the states core counts (sync/changes.ts `ALBUM_COUNTED_STATES`). */
  readonly assetCount: number;
}

/** One page's facts, read in one snapshot: the entries and the objects they name as they now stand. */
export interface SyncRead {
  /** The account's entries with a sequence above `after`, ascending, at most `limit`. */
  readonly entries: readonly SyncEntry[];
  /** The highest sequence number of a tombstone pruned from the account's log (0: none). */
  readonly prunedThrough: number;
  /** The account's last sequence number handed out (0: none), as of the snapshot. */
  readonly head: number;
  /** The assets the entries name that exist (any state). */
  readonly assets: readonly SyncAsset[];
  readonly albums: readonly SyncAlbum[];
  /** The links the entries name, revoked ones included (the removal names the link by its clear id). */
  readonly links: readonly LinkRecord[];
}

/**
 * The per-account change log behind library sync, and the reads of albums and assets a client
 * lists. Every write that creates, changes or removes an album, asset or link of an account appends
 * the changes core names for it (sync/changes.ts) in its own transaction, locking the account's
 * sequence row, so one account's sequence numbers commit in order. The log keeps one entry per
 * object: its latest.
 */
export interface SyncLog {
  /** The page's facts: entries after `after` (one index range scan over (account, seq)) and their objects, in one snapshot. */
  readSync(accountId: string, after: number, limit: number): Promise<SyncRead>;
  /**
   * Removes the entries core's TOMBSTONE_PRUNED takes at `before` (removals written before it),
   * raising each account's `prunedThrough`; returns how many went.
   */
  pruneSyncTombstones(before: number): Promise<number>;
  /** The asset with its album and last change, or null. */
  findAssetView(assetId: string): Promise<SyncAsset | null>;
  /** Those of `assetIds` that exist, any state and owner, in id order. */
  findAssetViews(assetIds: readonly string[]): Promise<SyncAsset[]>;
  /** The assets of `ownerId` whose original lies in `albumId`, in the states given, id above `afterId` (null: from the start), in id order, at most `limit`. */
  listAlbumAssets(
    ownerId: string,
    albumId: string,
    states: readonly string[],
    afterId: string | null,
    limit: number,
  ): Promise<SyncAsset[]>;
  findAlbumView(albumId: string): Promise<SyncAlbum | null>;
  /** The account's albums, oldest first. */
  listAlbums(accountId: string): Promise<SyncAlbum[]>;
}
