import { mayReach } from '../access/rules.js';
import { uuidv7 } from '../encoding/uuid.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AlbumRecord, AlbumStore } from '../ports/album-store.js';
import type { Clock } from '../ports/clock.js';
import type { DeviceDirectoryStore } from '../ports/device-directory.js';
import type { Random } from '../ports/random.js';
import type { AlbumWriteContext, AlbumWriteRefusal, FinalizeContext, WriteContext, WriteGuard, WriteRefusal } from '../ports/write-guard.js';
import { isDeviceActive } from '../devices/directory.js';
import { decideManifestIntent, decideQuiescence } from '../album-upgrade/server.js';
import { checkAlbumPin, type ProtocolWindow } from '../versioning/protocol.js';

/** An album as the access rule sees it (access/rules.ts): it belongs to the account it was made in. */
export const albumObject = (a: AlbumRecord) => ({ kind: 'album' as const, id: a.id, accountId: a.accountId });

export interface AlbumServiceDeps {
  readonly albums: AlbumStore;
  readonly directories: DeviceDirectoryStore;
  readonly clock: Clock;
  readonly random: Random;
  readonly window: ProtocolWindow;
}

export interface CreatedAlbum {
  readonly albumId: string;
  readonly protocolVersion: string;
}

/**
 * The write gate every writing operation passes first (contract 5.14, 9.8, 9.9), in this order:
 * the device is listed and active, the album exists on the account, the request is not below the
 * album's pin, and the album is not quiescing for an intent the write does not name. Writes into
 * an album that no device makes (links, guest drops) take the album part only, `checkAlbumWrite`.
 */
export class AlbumWriteGuard implements WriteGuard {
  readonly #d: Pick<AlbumServiceDeps, 'albums' | 'directories' | 'window'>;

  constructor(deps: Pick<AlbumServiceDeps, 'albums' | 'directories' | 'window'>) {
    this.#d = deps;
  }

  async checkWrite(context: WriteContext, now: number): Promise<Result<void, WriteRefusal>> {
    const addedAt = await guard('error.store.unavailable', 'reading the device directory', () =>
      this.#d.directories.findDeviceAddedAt(context.deviceAccountId ?? context.accountId, context.deviceId),
    );
    if (!isDeviceActive(addedAt === null ? null : { addedAt }, now)) {
      return refuse('error.device.unknown', 'This device is not listed (or not yet active) in the account\'s published directory.');
    }
    if (context.albumId === null) return ok(undefined);
    return this.checkAlbumWrite({ accountId: context.accountId, albumId: context.albumId, intentId: context.intentId, protocolVersion: context.protocolVersion }, now);
  }

  async checkAlbumWrite(context: AlbumWriteContext, now: number): Promise<Result<void, AlbumWriteRefusal>> {
    const album = await guard('error.store.unavailable', 'reading an album', () => this.#d.albums.findAlbum(context.albumId));
    if (album === null || !mayReach({ accountId: context.accountId }, albumObject(album), 'write')) return refuse('error.not_found', 'No such album on this account.');
    const pin = checkAlbumPin(context.protocolVersion, album.protocolVersion, this.#d.window);
    if (!pin.ok) return pin;
    return decideQuiescence(album, context.intentId, now);
  }

  async checkFinalize(context: FinalizeContext, now: number): Promise<Result<void, 'error.conflict'>> {
    if (context.albumId === null) {
      return context.manifestIntentId === null ? ok(undefined) : refuse('error.conflict', 'The manifest names an upgrade intent but the upload targets no album.');
    }
    const album = await guard('error.store.unavailable', 'reading an album', () => this.#d.albums.findAlbum(context.albumId!));
    if (album === null) return refuse('error.conflict', 'The upload\'s album no longer exists.');
    return decideManifestIntent(album, context.manifestIntentId, now);
  }
}

/** Album creation: pinned to the request's protocol version, forever. */
export class AlbumService {
  readonly #d: AlbumServiceDeps;
  readonly #guard: AlbumWriteGuard;

  constructor(deps: AlbumServiceDeps) {
    this.#d = deps;
    this.#guard = new AlbumWriteGuard(deps);
  }

  get writeGuard(): WriteGuard {
    return this.#guard;
  }

  async create(input: { accountId: string; actingOwnerId?: string | undefined; deviceId: string; protocolVersion: string }): Promise<Result<CreatedAlbum, 'error.device.unknown'>> {
    const now = this.#d.clock.now();
    const gate = await this.#guard.checkWrite({ accountId: input.accountId, deviceAccountId: input.actingOwnerId, deviceId: input.deviceId, albumId: null, intentId: null, protocolVersion: input.protocolVersion }, now);
    if (!gate.ok) return refuse('error.device.unknown', gate.detail);
    const albumId = uuidv7(now, this.#d.random.bytes(10));
    await guard('error.store.unavailable', 'creating an album', () =>
      this.#d.albums.createAlbum({ id: albumId, accountId: input.accountId, protocolVersion: input.protocolVersion, createdAt: now, upgrade: null }),
    );
    return ok({ albumId, protocolVersion: input.protocolVersion });
  }
}
