import { mayActForAccount, mayReach, type Accessor } from '../access/rules.js';
import { linkCoversAsset } from '../blobs/rules.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import { findLinkById, linkIdHash, openLinkId } from '../links/link-id.js';
import { linkStatus } from '../links/rules.js';
import type { Clock } from '../ports/clock.js';
import type { LinkRecord, LinkStore } from '../ports/link-store.js';
import type { SyncAlbum, SyncAsset, SyncLog } from '../ports/sync-log.js';
import type { SecretSealer } from '../secrets/secret-box.js';
import { ALBUM_COUNTED_STATES } from './changes.js';
import { openLinkCursor, openSyncCursor, sealLinkCursor, sealSyncCursor } from './cursor.js';
import { cursorExpired, planKeysetPage, planSyncPage, tombstoneHorizon, type SyncPosition } from './page.js';

export interface SyncServiceDeps {
  readonly log: SyncLog;
  readonly links: Pick<LinkStore, 'findLink'>;
  readonly clock: Clock;
  /** Seals cursors, and opens link ids for the changes that name a link (the store holds only their hash). */
  readonly sealer: SecretSealer;
  /** How long removals are kept (SVC_SYNC_TOMBSTONE_DAYS). */
  readonly tombstoneDays: number;
}

/** A link with its clear id, as its owner's listing shows it. */
export type SyncLink = LinkRecord & { readonly id: string };

/** One change as the client receives it. */
export type SyncPageChange =
  | { readonly kind: 'asset'; readonly id: string; readonly op: 'upsert'; readonly record: SyncAsset }
  | { readonly kind: 'album'; readonly id: string; readonly op: 'upsert'; readonly record: SyncAlbum }
  | { readonly kind: 'link'; readonly id: string; readonly op: 'upsert'; readonly record: SyncLink }
  | { readonly kind: 'asset' | 'album' | 'link'; readonly id: string; readonly op: 'remove'; readonly record: null };

export interface SyncPage<C> {
  readonly changes: readonly C[];
  readonly cursor: string;
  readonly hasMore: boolean;
}

export type CursorRefusal = 'error.request.invalid' | 'error.sync.cursor_expired';

const STORE = 'error.store.unavailable' as const;

/**
 * Library sync (spec §13.1 to §13.5): pages of an account's changes since a cursor, the
 * account's albums, an asset as a client syncs it, and what a share link covers. Which changes a
 * cursor has not seen, the tombstone horizon and the page order are decided in sync/page.ts; the
 * store reads one index range of the account's log.
 */
export class SyncService {
  readonly #d: SyncServiceDeps;
  constructor(deps: SyncServiceDeps) {
    this.#d = deps;
  }

  /** A page of the changes the caller's account made since `cursor` (null: every live object). */
  async page(
    caller: Accessor,
    cursor: string | null,
    limit: number,
  ): Promise<Result<SyncPage<SyncPageChange>, CursorRefusal>> {
    if (!mayActForAccount(caller)) return refuse('error.request.invalid', 'Only an account has a library to sync.');
    const accountId = caller.accountId;
    const now = this.#d.clock.now();
    let after: SyncPosition | null = null;
    if (cursor !== null) {
      after = await openSyncCursor(this.#d.sealer, accountId, cursor);
      if (after === null)
        return refuse('error.request.invalid', 'The cursor is not one this server gave this account.');
    }
    const read = await guard(STORE, 'sync read', () => this.#d.log.readSync(accountId, after?.seq ?? 0, limit + 1));
    if (after !== null && cursorExpired(after, read.prunedThrough, now, this.#d.tombstoneDays)) {
      return refuse(
        'error.sync.cursor_expired',
        'The cursor is older than the removals the server keeps: sync again without a cursor.',
      );
    }
    const plan = planSyncPage(read, after, limit);
    // Only a link's change waits on anything (its clear id, unsealed); the rest pass as they are.
    const linked = plan.changes.filter((c) => c.kind === 'link');
    const linkIds =
      linked.length === 0 ? [] : await Promise.all(linked.map((c) => openLinkId(this.#d.sealer, c.record)));
    let nextLink = 0;
    const changes = plan.changes.map((c): SyncPageChange => {
      if (c.kind === 'link') {
        const id = linkIds[nextLink++]!;
        return c.op === 'upsert'
          ? { kind: 'link', id, op: 'upsert', record: { ...c.record, id } }
          : { kind: 'link', id, op: 'remove', record: null };
      }
      return c;
    });
    return ok({
      changes,
      cursor: await sealSyncCursor(this.#d.sealer, accountId, { seq: plan.seq, issuedAt: now, floor: plan.floor }),
      hasMore: plan.hasMore,
    });
  }

  /** The caller's albums, oldest first. */
  async albums(caller: Accessor): Promise<SyncAlbum[]> {
    if (!mayActForAccount(caller)) return [];
    const albums = await guard(STORE, 'album read', () => this.#d.log.listAlbums(caller.accountId));
    return albums.filter((a) => mayReach(caller, { kind: 'album', id: a.id, accountId: a.accountId }, 'read'));
  }

  async album(caller: Accessor, albumId: string): Promise<Result<SyncAlbum, 'error.not_found'>> {
    const a = await guard(STORE, 'album read', () => this.#d.log.findAlbumView(albumId));
    if (a === null || !mayReach(caller, { kind: 'album', id: a.id, accountId: a.accountId }, 'read'))
      return refuse('error.not_found', 'No such album.');
    return ok(a);
  }

  /** The asset as a client syncs it, if the caller may see it; a pending drop is not an asset yet. */
  async asset(caller: Accessor, assetId: string): Promise<Result<SyncAsset, 'error.not_found'>> {
    const a = await guard(STORE, 'asset read', () => this.#d.log.findAssetView(assetId));
    if (
      a === null ||
      a.state === 'pending_drop' ||
      !mayReach(caller, { kind: 'asset', id: a.id, accountId: a.ownerId }, 'read')
    )
      return refuse('error.not_found', 'No such asset.');
    return ok(a);
  }

  /**
   * The live assets a share link covers (core's `linkCoversAsset`, the rule its blob reads follow),
   * in keyset pages by asset id. Anything but an active share link is not found, as the link is.
   */
  async linkAssets(
    linkId: string,
    cursor: string | null,
    limit: number,
  ): Promise<Result<SyncPage<SyncAsset>, 'error.not_found' | 'error.request.invalid'>> {
    const link = await guard(STORE, 'link read', () => findLinkById(this.#d.links, linkId));
    const now = this.#d.clock.now();
    if (link === null || link.kind !== 'share' || linkStatus(link, now) !== 'active')
      return refuse('error.not_found', 'No such link.');
    const idHash = linkIdHash(linkId)!;
    let afterId: string | null = null;
    if (cursor !== null) {
      afterId = await openLinkCursor(this.#d.sealer, idHash, cursor);
      if (afterId === null)
        return refuse('error.request.invalid', 'The cursor is not one this server gave for this link.');
    }
    const candidates = await guard(STORE, 'asset read', () =>
      link.assetIds.length > 0
        ? this.#d.log.findAssetViews(link.assetIds.filter((id) => afterId === null || id > afterId))
        : this.#d.log.listAlbumAssets(link.ownerId, link.albumId!, ALBUM_COUNTED_STATES, afterId, limit + 1),
    );
    const covered = candidates
      .filter((a) =>
        linkCoversAsset(link, { assetId: a.id, ownerId: a.ownerId, state: a.state, albumId: a.albumId }, now),
      )
      .sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    const plan = planKeysetPage(covered, limit);
    const last = plan.last ?? afterId;
    return ok({
      changes: plan.items,
      cursor: await sealLinkCursor(this.#d.sealer, idHash, last ?? ''),
      hasMore: plan.hasMore,
    });
  }

  /** Prunes removals older than the horizon (run with the GC sweep); returns how many went. */
  prune(): Promise<number> {
    return guard(STORE, 'sync prune', () =>
      this.#d.log.pruneSyncTombstones(tombstoneHorizon(this.#d.clock.now(), this.#d.tombstoneDays)),
    );
  }
}
