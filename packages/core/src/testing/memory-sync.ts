import type { AssetRecord } from '../ports/asset-catalog.js';
import type { LinkRecord } from '../ports/link-store.js';
import type { SyncAlbum, SyncAsset, SyncChange, SyncEntry, SyncLog, SyncRead } from '../ports/sync-log.js';
import { ALBUM_COUNTED_STATES } from '../sync/changes.js';
import { tombstonePruned } from '../sync/page.js';
import type { MemoryAlbumStore } from './memory-albums.js';
import type { MemoryQuotaStore } from './memory-quota-store.js';
import type { MemoryLinkStore } from './memory-sharing.js';

const key = (kind: string, objectId: string): string => `${kind}\n${objectId}`;

/**
 * The in-memory sync log: per account, a sequence counter and the latest entry of each object. The
 * memory stores append in the same synchronous step as the write they record, as a SQL store does
 * in the write's transaction.
 */
export class MemorySyncLog implements SyncLog {
  readonly heads = new Map<string, { seq: number; prunedThrough: number }>();
  readonly entries = new Map<string, Map<string, SyncEntry>>();

  constructor(
    readonly stores: {
      readonly quota: MemoryQuotaStore;
      readonly albums: MemoryAlbumStore;
      readonly links: MemoryLinkStore;
    },
  ) {}

  /** Records `changes` for `accountId`: each gets the account's next sequence number and replaces its object's entry. */
  append(accountId: string, changes: readonly SyncChange[], at: number): void {
    if (changes.length === 0) return;
    const head = this.heads.get(accountId) ?? { seq: 0, prunedThrough: 0 };
    const log = this.entries.get(accountId) ?? new Map<string, SyncEntry>();
    for (const c of changes) {
      head.seq += 1;
      log.set(key(c.kind, c.objectId), { ...c, seq: head.seq, at });
    }
    this.heads.set(accountId, head);
    this.entries.set(accountId, log);
  }

  /** A link an earlier build stored in clear moved to its hash: its entry moves with it. */
  rekeyLink(clearId: string, idHash: string): void {
    for (const log of this.entries.values()) {
      const e = log.get(key('link', clearId));
      if (e === undefined) continue;
      log.delete(key('link', clearId));
      log.set(key('link', idHash), { ...e, objectId: idHash });
    }
  }

  async readSync(accountId: string, after: number, limit: number): Promise<SyncRead> {
    const entries = [...(this.entries.get(accountId)?.values() ?? [])]
      .filter((e) => e.seq > after)
      .sort((a, b) => a.seq - b.seq)
      .slice(0, limit);
    const assets: SyncAsset[] = [];
    const albums: SyncAlbum[] = [];
    const links: LinkRecord[] = [];
    for (const e of entries) {
      if (e.kind === 'asset') {
        const a = this.stores.quota.assets.get(e.objectId);
        if (a) assets.push(this.#view(a));
      } else if (e.kind === 'album') {
        const a = this.#album(e.objectId);
        if (a) albums.push(a);
      } else {
        const l = this.stores.links.links.get(e.objectId);
        if (l) links.push(l);
      }
    }
    const head = this.heads.get(accountId);
    return { entries, prunedThrough: head?.prunedThrough ?? 0, head: head?.seq ?? 0, assets, albums, links };
  }

  async pruneSyncTombstones(before: number): Promise<number> {
    let n = 0;
    for (const [accountId, log] of this.entries) {
      for (const [k, e] of log) {
        if (!tombstonePruned(e, before)) continue;
        log.delete(k);
        const head = this.heads.get(accountId)!;
        head.prunedThrough = Math.max(head.prunedThrough, e.seq);
        n++;
      }
    }
    return n;
  }

  async findAssetView(assetId: string): Promise<SyncAsset | null> {
    const a = this.stores.quota.assets.get(assetId);
    return a ? this.#view(a) : null;
  }
  async findAssetViews(assetIds: readonly string[]): Promise<SyncAsset[]> {
    return [...new Set(assetIds)].sort().flatMap((id) => {
      const a = this.stores.quota.assets.get(id);
      return a ? [this.#view(a)] : [];
    });
  }
  async listAlbumAssets(
    ownerId: string,
    albumId: string,
    states: readonly string[],
    afterId: string | null,
    limit: number,
  ): Promise<SyncAsset[]> {
    return [...this.stores.quota.assets.values()]
      .filter(
        (a) =>
          a.ownerId === ownerId &&
          states.includes(a.state) &&
          (afterId === null || a.id > afterId) &&
          this.#albumOf(a.id) === albumId,
      )
      .sort((x, y) => (x.id < y.id ? -1 : 1))
      .slice(0, limit)
      .map((a) => this.#view(a));
  }
  async findAlbumView(albumId: string): Promise<SyncAlbum | null> {
    return this.#album(albumId);
  }
  async listAlbums(accountId: string): Promise<SyncAlbum[]> {
    return [...this.stores.albums.albums.values()]
      .filter((a) => a.accountId === accountId)
      .sort((x, y) => x.createdAt - y.createdAt || (x.id < y.id ? -1 : 1))
      .map((a) => this.#album(a.id)!);
  }

  #albumOf(assetId: string): string | null {
    return this.stores.quota.uploads.get(assetId)?.albumId ?? null;
  }
  #view(a: AssetRecord): SyncAsset {
    const entry = this.entries.get(a.ownerId)?.get(key('asset', a.id));
    return { ...a, albumId: this.#albumOf(a.id), updatedAt: entry?.at ?? a.createdAt };
  }
  #album(albumId: string): SyncAlbum | null {
    const a = this.stores.albums.albums.get(albumId);
    if (!a) return null;
    let assetCount = 0;
    for (const asset of this.stores.quota.assets.values())
      if (ALBUM_COUNTED_STATES.includes(asset.state) && this.#albumOf(asset.id) === albumId) assetCount++;
    return { id: a.id, accountId: a.accountId, protocolVersion: a.protocolVersion, createdAt: a.createdAt, assetCount };
  }
}
