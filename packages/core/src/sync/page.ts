import { holds, type RowFilter } from '../filters/filter.js';
import type { LinkRecord } from '../ports/link-store.js';
import type { SyncAlbum, SyncAsset, SyncEntry, SyncRead } from '../ports/sync-log.js';

/** `limit` of a sync page: 1 to 1,000, 500 when the client names none. */
export const SYNC_PAGE_LIMIT = { min: 1, max: 1000, default: 500 } as const;
export const DEFAULT_TOMBSTONE_DAYS = 90;
const DAY_MS = 86_400_000;

/** Where a client stands in its account's log. */
export interface SyncPosition {
  /** The last sequence number its pages returned. */
  readonly seq: number;
  /** When the page that returned it was read. */
  readonly issuedAt: number;
  /**
   * The account's last sequence number when the client's listing began. A removal is final (a
   * purged asset, a revoked link never come back), so a tombstone numbered up to it removed an
   * object before the listing could read it: the client never held that object, and its pruning
   * takes nothing from the client.
   */
  readonly floor: number;
}

/** Tombstones written before this instant may be pruned; a cursor issued before it is expired. */
export function tombstoneHorizon(now: number, tombstoneDays: number): number {
  return now - tombstoneDays * DAY_MS;
}

/**
 * The log entries a prune at horizon `before` removes (parameter `before`): removals written before
 * it. Upserts stay whatever their age: they are each object's standing entry.
 */
export const TOMBSTONE_PRUNED: RowFilter<'op' | 'at'> = [
  { op: 'in', field: 'op', values: ['remove'] },
  { op: '<', field: 'at', param: 'before' },
];

export function tombstonePruned(entry: Pick<SyncEntry, 'op' | 'at'>, before: number): boolean {
  return holds(TOMBSTONE_PRUNED, entry, { before });
}

/**
 * A cursor is expired (410, the client starts again without one) when it is older than the
 * tombstone horizon, or when a tombstone it has not seen was pruned since its listing began (a
 * removal it would never learn: a write that read the clock before the page but committed after
 * it, pruned at the horizon's edge).
 */
export function cursorExpired(
  position: SyncPosition,
  prunedThrough: number,
  now: number,
  tombstoneDays: number,
): boolean {
  return (
    position.issuedAt < tombstoneHorizon(now, tombstoneDays) || prunedThrough > Math.max(position.seq, position.floor)
  );
}

/**
 * One change of a page, its object as it now stands (null for a removal). `id` is the album's or
 * asset's id, or a link's id hash (the service opens its clear id); an album's or asset's change is
 * already as the client receives it.
 */
export type PageChange =
  | { readonly kind: 'asset'; readonly id: string; readonly op: 'upsert'; readonly record: SyncAsset }
  | { readonly kind: 'album'; readonly id: string; readonly op: 'upsert'; readonly record: SyncAlbum }
  | { readonly kind: 'link'; readonly id: string; readonly op: 'upsert'; readonly record: LinkRecord }
  | { readonly kind: 'asset' | 'album'; readonly id: string; readonly op: 'remove'; readonly record: null }
  | { readonly kind: 'link'; readonly id: string; readonly op: 'remove'; readonly record: LinkRecord };

export interface PagePlan {
  readonly changes: readonly PageChange[];
  /** The sequence number the next page starts after. */
  readonly seq: number;
  /** The position's floor (SyncPosition.floor): set by a first listing, then carried. */
  readonly floor: number;
  readonly hasMore: boolean;
}

/**
 * A page from the facts the store read with `limit + 1` entries after the client's position (null:
 * a first listing). Entries come in sequence order, which is the order the account's writes
 * committed; each object appears once, as its latest change. A first listing leaves out removals
 * (of objects the client never held); a later page keeps them. An entry whose object the snapshot
 * no longer holds (it cannot: entry and object are read together) is a removal.
 */
export function planSyncPage(read: SyncRead, after: SyncPosition | null, limit: number): PagePlan {
  const taken = read.entries.length > limit ? read.entries.slice(0, limit) : read.entries;
  const assets = byId(read.assets, (a) => a.id);
  const albums = byId(read.albums, (a) => a.id);
  const links = byId(read.links, (l) => l.idHash);
  const changes: PageChange[] = [];
  for (const e of taken) {
    const change = pageChange(e, assets, albums, links);
    if (change === null || (after === null && change.op === 'remove')) continue;
    changes.push(change);
  }
  const seq = taken.length > 0 ? taken[taken.length - 1]!.seq : (after?.seq ?? 0);
  return { changes, seq, floor: after === null ? read.head : after.floor, hasMore: read.entries.length > limit };
}

function byId<T>(items: readonly T[], key: (item: T) => string): Map<string, T> {
  const map = new Map<string, T>();
  for (const item of items) map.set(key(item), item);
  return map;
}

function pageChange(
  e: SyncEntry,
  assets: Map<string, SyncAsset>,
  albums: Map<string, SyncAlbum>,
  links: Map<string, LinkRecord>,
): PageChange | null {
  if (e.kind === 'link') {
    const link = links.get(e.objectId);
    // A link is never deleted, only revoked: one missing is not the account's to name.
    if (link === undefined) return null;
    return e.op === 'upsert' && link.revokedAt === null
      ? { kind: 'link', id: e.objectId, op: 'upsert', record: link }
      : { kind: 'link', id: e.objectId, op: 'remove', record: link };
  }
  if (e.kind === 'asset') {
    const a = assets.get(e.objectId);
    return e.op === 'upsert' && a !== undefined
      ? { kind: 'asset', id: e.objectId, op: 'upsert', record: a }
      : { kind: 'asset', id: e.objectId, op: 'remove', record: null };
  }
  const album = albums.get(e.objectId);
  return e.op === 'upsert' && album !== undefined
    ? { kind: 'album', id: e.objectId, op: 'upsert', record: album }
    : { kind: 'album', id: e.objectId, op: 'remove', record: null };
}

/** The records a recipient of a share link lists: keyset pages by asset id. */
export function planKeysetPage<T extends { readonly id: string }>(
  covered: readonly T[],
  limit: number,
): { readonly items: readonly T[]; readonly hasMore: boolean; readonly last: string | null } {
  const items = covered.slice(0, limit);
  return { items, hasMore: covered.length > limit, last: items.length > 0 ? items[items.length - 1]!.id : null };
}
