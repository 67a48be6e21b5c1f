import { decideAbort, decideProposal, withUpgrade } from '../album-upgrade/server.js';
import type { AlbumRecord, AlbumStore, ProposeOutcome, UpgradeIntentRecord } from '../ports/album-store.js';
import type { UploadsInFlight } from '../ports/uploads-in-flight.js';
import { albumCreated } from '../sync/changes.js';
import type { MemorySyncLog } from './memory-sync.js';

/** In-memory reference implementation of the album store. */
export class MemoryAlbumStore implements AlbumStore {
  readonly albums = new Map<string, AlbumRecord>();
  readonly intents = new Map<string, UpgradeIntentRecord>();
  /** The sync log album creation appends to in the same step (createMemoryPorts wires it). */
  sync: MemorySyncLog | null = null;

  async createAlbum(album: AlbumRecord): Promise<void> {
    if (this.albums.has(album.id)) throw new Error(`album ${album.id} exists`);
    this.albums.set(album.id, album);
    this.sync?.append(album.accountId, albumCreated(album.id), album.createdAt);
  }
  async findAlbum(albumId: string): Promise<AlbumRecord | null> {
    return this.albums.get(albumId) ?? null;
  }
  async proposeIntent(intent: UpgradeIntentRecord, now: number): Promise<ProposeOutcome> {
    const album = this.albums.get(intent.albumId) ?? null;
    const outcome = decideProposal(album, this.intents.get(intent.intentId) ?? null, intent, now);
    if (outcome.kind === 'accepted' && album !== null) {
      this.intents.set(intent.intentId, intent);
      this.albums.set(album.id, withUpgrade(album, intent));
    }
    return outcome;
  }
  async abortIntent(albumId: string, intentId: string, now: number): Promise<boolean> {
    const album = this.albums.get(albumId);
    if (album === undefined || !decideAbort(album, intentId, now)) return false;
    this.albums.set(albumId, { ...album, upgrade: null });
    return true;
  }
  async findIntent(intentId: string): Promise<UpgradeIntentRecord | null> {
    return this.intents.get(intentId) ?? null;
  }
}

/** A settable stand-in for the upload store's in-flight count, for tests of the ceremony alone. */
export class FakeUploadsInFlight implements UploadsInFlight {
  readonly counts = new Map<string, number>();
  set(albumId: string, count: number): void {
    this.counts.set(albumId, count);
  }
  async countInFlightUploads(albumId: string): Promise<number> {
    return this.counts.get(albumId) ?? 0;
  }
}
