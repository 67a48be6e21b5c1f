import { mayActForAccount, mayReach, reach, type Accessor } from '../access/rules.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AssetCatalog, AssetRecord } from '../ports/asset-catalog.js';
import type { Clock } from '../ports/clock.js';
import type { UploadSessions } from '../ports/upload-sessions.js';
import type { AlbumWriteRefusal, WriteGuard } from '../ports/write-guard.js';
import { albumOfAsset } from '../albums/asset-album.js';
import { admitsMetadataEdit, type MetadataEditRefusal } from './metadata-edit.js';
import type { QuotaService } from '../quota/service.js';

export interface AssetServiceDeps {
  readonly assets: AssetCatalog;
  /** Also stores a metadata edit's bytes, and collects a refused edit's, with the blob hand-over (blobs/handoff.ts). */
  readonly quota: QuotaService;
  /** Where an asset's album is read from (its original's upload session). */
  readonly sessions: Pick<UploadSessions, 'findUpload'>;
  readonly writeGuard: WriteGuard;
  readonly clock: Clock;
}

/** What a write to an asset carries besides its own input: an asset of an album is written in that album. */
export interface AssetWrite {
  /** The request's X-Svc-Protocol version (the album's pin). */
  readonly protocolVersion: string;
  /** The album's live upgrade intent the write names, if any (quiescence is a filter on it). */
  readonly intentId: string | null;
}

type Caller = Accessor;
type Missing = 'error.not_found';
type Conflict = 'error.conflict';
type Guarded = AlbumWriteRefusal;

const STORE = 'error.store.unavailable' as const;

/**
 * The minimal asset lifecycle quota needs: trash keeps every byte charged; a hard purge (or
 * trash-empty, or a discarded drop) drops references, and only the next sweep credits the bytes.
 * A write to an asset of an album (metadata, trash, restore, purge, and trash-empty for each asset it
 * takes) is a write to that album and passes its write guard (pin and quiescence) first, as an
 * upload into it does.
 */
export class AssetService {
  readonly #d: AssetServiceDeps;
  constructor(deps: AssetServiceDeps) {
    this.#d = deps;
  }

  /** The asset if the caller may see it (access/rules.ts); a pending drop is not an asset yet. */
  async get(caller: Caller, id: string): Promise<Result<AssetRecord, Missing>> {
    return this.#reach(caller, id, 'read');
  }

  async #reach(caller: Caller, id: string, action: 'read' | 'write'): Promise<Result<AssetRecord, Missing>> {
    const a = await guard(STORE, 'asset read', () => this.#d.assets.findAsset(id));
    if (!a || a.state === 'pending_drop' || !mayReach(caller, assetObject(a), action))
      return refuse('error.not_found', 'No such asset.');
    return ok(a);
  }

  /**
   * The asset if the caller may write it and, when it lies in an album, that album's guard admits
   * the write (the asset's owner is the album's: the guard reads the album as theirs).
   */
  async #reachToWrite(caller: Caller, id: string, write: AssetWrite): Promise<Result<AssetRecord, Missing | Guarded>> {
    const a = await this.#reach(caller, id, 'write');
    if (!a.ok) return a;
    const albumId = await guard(STORE, 'upload session read', () => albumOfAsset(this.#d.sessions, id));
    if (albumId === null) return a;
    const gate = await this.#albumAdmits(a.value.ownerId, albumId, write, this.#d.clock.now());
    return gate.ok ? a : gate;
  }

  /** The album's write guard (pin, quiescence) for a write to an asset of `ownerId` that lies in it. */
  #albumAdmits(ownerId: string, albumId: string, write: AssetWrite, now: number): Promise<Result<void, Guarded>> {
    return this.#d.writeGuard.checkAlbumWrite(
      { accountId: ownerId, albumId, intentId: write.intentId, protocolVersion: write.protocolVersion },
      now,
    );
  }

  async trash(
    caller: Caller,
    id: string,
    write: AssetWrite,
  ): Promise<Result<AssetRecord, Missing | Conflict | Guarded>> {
    return this.#step(caller, id, write, (now) => this.#d.assets.trashAsset(id, now), 'The asset is not live.');
  }

  async restore(
    caller: Caller,
    id: string,
    write: AssetWrite,
  ): Promise<Result<AssetRecord, Missing | Conflict | Guarded>> {
    return this.#step(
      caller,
      id,
      write,
      (now) => this.#d.assets.restoreAsset(id, now),
      'The asset is not in the trash.',
    );
  }

  /** Hard purge of a trashed asset: its references drop now, its bytes are credited at the sweep. */
  async purge(caller: Caller, id: string, write: AssetWrite): Promise<Result<void, Missing | Conflict | Guarded>> {
    const a = await this.#reachToWrite(caller, id, write);
    if (!a.ok) return a;
    if (!(await guard(STORE, 'asset write', () => this.#d.assets.purgeAsset(id, this.#d.clock.now()))))
      return refuse('error.conflict', 'Only an asset in the trash can be purged.');
    return ok(undefined);
  }

  /**
   * Purges every asset in the caller's trash. Each purge is a write to the album its asset lies in,
   * so the request passes the guard of every such album first, as the purge of each asset would;
   * one refusal refuses the whole request (naming the album in `album_id`) and nothing is purged.
   * Exactly the assets judged are purged: one trashed meanwhile, in an album not judged, stays.
   */
  async emptyTrash(caller: Caller, write: AssetWrite): Promise<Result<number, Guarded>> {
    if (!mayActForAccount(caller)) return ok(0);
    const trash = await guard(STORE, 'asset read', () => this.#d.assets.listTrash(caller.accountId));
    const now = this.#d.clock.now();
    const albums = new Set(trash.flatMap((t) => (t.albumId === null ? [] : [t.albumId])));
    for (const albumId of albums) {
      const gate = await this.#albumAdmits(caller.accountId, albumId, write, now);
      if (!gate.ok) return { ...gate, data: { ...gate.data, album_id: albumId } };
    }
    return ok(
      await guard(STORE, 'asset write', () =>
        this.#d.assets.emptyTrash(
          caller.accountId,
          trash.map((t) => t.assetId),
          now,
        ),
      ),
    );
  }

  /** The link owner takes a pending drop into the library (adoption adds only small blobs later). */
  async adoptDrop(linkOwner: Caller, id: string): Promise<Result<AssetRecord, Missing>> {
    const a = await guard(STORE, 'asset read', () => this.#d.assets.findAsset(id));
    if (
      !reach(linkOwner, a && assetObject(a), 'write').ok ||
      !(await guard(STORE, 'asset write', () => this.#d.assets.adoptDrop(id, this.#d.clock.now())))
    ) {
      return refuse('error.not_found', 'No such pending drop.');
    }
    return ok((await this.#d.assets.findAsset(id))!);
  }

  /** Discards a pending drop: its bytes are freed at the next sweep. */
  async discardDrop(linkOwner: Caller, id: string): Promise<Result<void, Missing>> {
    const a = await guard(STORE, 'asset read', () => this.#d.assets.findAsset(id));
    if (a?.state !== 'pending_drop' || !mayReach(linkOwner, assetObject(a), 'write'))
      return refuse('error.not_found', 'No such pending drop.');
    // Decided again under the store's lock: an adoption that won the race keeps the asset, and this discard says so.
    const discarded = await guard(STORE, 'asset write', () => this.#d.assets.discardDrop(id));
    return discarded ? ok(undefined) : refuse('error.not_found', 'No such pending drop.');
  }

  /**
   * A caption or tag edit: the asset's metadata blob is replaced. The store decides it in the
   * transaction that charges it (decideMetadataReplace): growth (new minus old) is refused in
   * GraceExpired and Suspended unless it follows the caller's own delete or restore, within the
   * overdraft; the new blob is charged now, the old one is credited by the sweep. Concurrent edits
   * for one payer are each judged on the charges of those before them. The bytes are stored first
   * (blobs/store-bytes.ts): when the edit is refused they go as the sweep's do (handoff.ts), unless
   * the ledger holds them for another writer.
   */
  async replaceMetadata(
    caller: Caller,
    id: string,
    bytes: Uint8Array,
    write: AssetWrite,
  ): Promise<Result<AssetRecord, Missing | MetadataEditRefusal | Guarded>> {
    const a = await this.#reachToWrite(caller, id, write);
    if (!a.ok) return a;
    // Read before the bytes are stored, so a trashed asset costs no write; the store judges it again.
    const live = admitsMetadataEdit(a.value.state);
    if (!live.ok) return live;
    const now = this.#d.clock.now();
    const { contentHash, recorded } = await this.#d.quota.storeWholeBytes('meta', bytes, (contentHash) =>
      guard(STORE, 'asset write', () =>
        this.#d.assets.replaceMetadata(
          { assetId: id, accountId: caller.accountId, contentHash, size: bytes.length },
          this.#d.quota.policy,
          now,
        ),
      ),
    );
    if (!recorded.ok) {
      await this.#d.quota.collectUnrecorded(contentHash);
      return recorded;
    }
    return ok((await this.#d.assets.findAsset(id))!);
  }

  async #step(
    caller: Caller,
    id: string,
    write: AssetWrite,
    change: (now: number) => Promise<boolean>,
    conflict: string,
  ): Promise<Result<AssetRecord, Missing | Conflict | Guarded>> {
    const a = await this.#reachToWrite(caller, id, write);
    if (!a.ok) return a;
    if (!(await guard(STORE, 'asset write', () => change(this.#d.clock.now()))))
      return refuse('error.conflict', conflict);
    return ok((await this.#d.assets.findAsset(id))!);
  }
}

/** An asset as the access rule sees it: it belongs to its owner (never to whoever pays for it). */
export const assetObject = (a: AssetRecord) => ({ kind: 'asset' as const, id: a.id, accountId: a.ownerId });
