import { mayReach } from '../access/rules.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AlbumStore } from '../ports/album-store.js';
import type { DeviceDirectoryStore } from '../ports/device-directory.js';
import type {
  AlbumWriteContext,
  AlbumWriteRefusal,
  FinalizeContext,
  InFlightWriteContext,
  WriteContext,
  WriteGuard,
  WriteRefusal,
} from '../ports/write-guard.js';
import { isDeviceActive } from '../devices/directory.js';
import { decideManifestIntent, decideQuiescence } from '../album-upgrade/server.js';
import { albumObject } from '../albums/object.js';
import { checkAlbumPin, type ProtocolWindow } from '../versioning/protocol.js';

export interface AlbumWriteGuardDeps {
  readonly albums: AlbumStore;
  readonly directories: DeviceDirectoryStore;
  readonly window: ProtocolWindow;
}

/**
 * The write gate every writing operation passes first (spec §7.6, §14.5, §14.9), in this order:
 * the device is listed and active, the album exists on the account, the request is not below the
 * album's pin, and the album is not quiescing for an intent the write does not name. Writes into
 * an album that no device makes (links, guest drops) take the album part only, `checkAlbumWrite`.
 */
export class AlbumWriteGuard implements WriteGuard {
  readonly #d: AlbumWriteGuardDeps;

  constructor(deps: AlbumWriteGuardDeps) {
    this.#d = deps;
  }

  async checkWrite(context: WriteContext, now: number): Promise<Result<void, WriteRefusal>> {
    const addedAt = await guard('error.store.unavailable', 'reading the device directory', () =>
      this.#d.directories.findDeviceAddedAt(context.deviceAccountId ?? context.accountId, context.deviceId),
    );
    if (!isDeviceActive(addedAt === null ? null : { addedAt }, now)) {
      return refuse(
        'error.device.unknown',
        "This device is not listed (or not yet active) in the account's published directory.",
      );
    }
    if (context.albumId === null) return ok(undefined);
    return this.checkAlbumWrite(
      {
        accountId: context.accountId,
        albumId: context.albumId,
        intentId: context.intentId,
        protocolVersion: context.protocolVersion,
      },
      now,
    );
  }

  async checkAlbumWrite(context: AlbumWriteContext, now: number): Promise<Result<void, AlbumWriteRefusal>> {
    const album = await guard('error.store.unavailable', 'reading an album', () =>
      this.#d.albums.findAlbum(context.albumId),
    );
    if (album === null || !mayReach({ accountId: context.accountId }, albumObject(album), 'write'))
      return refuse('error.not_found', 'No such album on this account.');
    const pin = checkAlbumPin(context.protocolVersion, album.protocolVersion, this.#d.window);
    if (!pin.ok) return pin;
    return decideQuiescence(album, context.intentId, now);
  }

  async checkInFlightWrite(context: InFlightWriteContext): Promise<Result<void, 'error.protocol.below_album_pin'>> {
    const album = await guard('error.store.unavailable', 'reading an album', () =>
      this.#d.albums.findAlbum(context.albumId),
    );
    // Albums are never deleted; were one gone, finalize's checkFinalize answers for it.
    if (album === null) return ok(undefined);
    return checkAlbumPin(context.protocolVersion, album.protocolVersion, this.#d.window);
  }

  async checkFinalize(context: FinalizeContext, now: number): Promise<Result<void, 'error.conflict'>> {
    if (context.albumId === null) {
      return context.manifestIntentId === null
        ? ok(undefined)
        : refuse('error.conflict', 'The manifest names an upgrade intent but the upload targets no album.');
    }
    const album = await guard('error.store.unavailable', 'reading an album', () =>
      this.#d.albums.findAlbum(context.albumId!),
    );
    if (album === null) return refuse('error.conflict', "The upload's album no longer exists.");
    return decideManifestIntent(album, context.manifestIntentId, now);
  }
}
