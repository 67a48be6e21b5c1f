import { uuidv7 } from '../encoding/uuid.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AlbumStore } from '../ports/album-store.js';
import type { Clock } from '../ports/clock.js';
import type { DeviceDirectoryStore } from '../ports/device-directory.js';
import type { Random } from '../ports/random.js';
import type { WriteGuard } from '../ports/write-guard.js';
import type { ProtocolWindow } from '../versioning/protocol.js';
import { AlbumWriteGuard } from '../write-guard/guard.js';

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

  async create(input: {
    accountId: string;
    actingOwnerId?: string | undefined;
    deviceId: string;
    protocolVersion: string;
  }): Promise<Result<CreatedAlbum, 'error.device.unknown'>> {
    const now = this.#d.clock.now();
    const gate = await this.#guard.checkWrite(
      {
        accountId: input.accountId,
        deviceAccountId: input.actingOwnerId,
        deviceId: input.deviceId,
        albumId: null,
        intentId: null,
        protocolVersion: input.protocolVersion,
      },
      now,
    );
    if (!gate.ok) return refuse('error.device.unknown', gate.detail);
    const albumId = uuidv7(now, this.#d.random.bytes(10));
    await guard('error.store.unavailable', 'creating an album', () =>
      this.#d.albums.createAlbum({
        id: albumId,
        accountId: input.accountId,
        protocolVersion: input.protocolVersion,
        createdAt: now,
        upgrade: null,
      }),
    );
    return ok({ albumId, protocolVersion: input.protocolVersion });
  }
}
