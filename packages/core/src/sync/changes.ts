import type { AssetState } from '../ports/asset-catalog.js';
import type { SyncChange } from '../ports/sync-log.js';

/**
 * Which changes a write records in its account's sync log (spec §13.2, §13.3). The
 * stores call these in the write's own transaction and append what they answer; nothing else
 * decides what a client sees change.
 */

/** The asset states a client syncs: a pending drop is not in the library until its owner adopts it. */
export const SYNCED_ASSET_STATES: readonly AssetState[] = ['live', 'trashed'];

/** The asset states an album's `asset_count` counts: what the album shows (the trash is apart). */
export const ALBUM_COUNTED_STATES: readonly AssetState[] = ['live'];

const synced = (s: AssetState | null): boolean => s !== null && SYNCED_ASSET_STATES.includes(s);
const counted = (s: AssetState | null): boolean => s !== null && ALBUM_COUNTED_STATES.includes(s);

/**
 * A write that moved an asset from `before` to `after` (null: absent), or changed its blobs when
 * both are the same: the asset is upserted while it is synced and removed when it stops being, and
 * its album, whose count moved, is upserted with it.
 */
export function assetChanges(
  assetId: string,
  albumId: string | null,
  before: AssetState | null,
  after: AssetState | null,
): SyncChange[] {
  const out: SyncChange[] = [];
  if (synced(after)) out.push({ kind: 'asset', objectId: assetId, op: 'upsert' });
  else if (synced(before)) out.push({ kind: 'asset', objectId: assetId, op: 'remove' });
  if (albumId !== null && counted(before) !== counted(after))
    out.push({ kind: 'album', objectId: albumId, op: 'upsert' });
  return out;
}

/** A new album. */
export function albumCreated(albumId: string): SyncChange[] {
  return [{ kind: 'album', objectId: albumId, op: 'upsert' }];
}

/** A link created (upserted) or revoked (removed: a revoked link reaches nothing again). */
export function linkChanges(idHash: string, revoked: boolean): SyncChange[] {
  return [{ kind: 'link', objectId: idHash, op: revoked ? 'remove' : 'upsert' }];
}
