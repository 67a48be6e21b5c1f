import { mayReach } from '../access/rules.js';
import { albumObject } from '../albums/object.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AlbumRecord, AlbumStore } from '../ports/album-store.js';
import type { Clock } from '../ports/clock.js';
import type { DeviceDirectoryStore } from '../ports/device-directory.js';
import type { UploadsInFlight } from '../ports/uploads-in-flight.js';
import { isDeviceActive } from '../devices/directory.js';
import { checkAlbumPin, type ProtocolWindow } from '../versioning/protocol.js';
import { parseSignedUpgradeIntent, verifyHybrid } from './intent.js';
import { decideAbort, upgradeExpiresAt, upgradeStatus, type UpgradeStatus } from './server.js';

export interface UpgradeServiceDeps {
  readonly albums: AlbumStore;
  readonly directories: DeviceDirectoryStore;
  readonly uploads: UploadsInFlight;
  readonly clock: Clock;
  readonly window: ProtocolWindow;
}

/** Who asks, and at which protocol version the request is written. */
export interface UpgradeCaller {
  readonly accountId: string;
  readonly protocolVersion: string;
  /** Acting as a sponsored account: the proposer is a device of this owner's directory. */
  readonly actingOwnerId?: string | undefined;
}

export type ProposeRefusal =
  | 'error.request.invalid'
  | 'error.not_found'
  | 'error.protocol.below_album_pin'
  | 'error.album.intent_mismatch'
  | 'error.album.proposer_invalid'
  | 'error.album.upgrade_in_flight'
  | 'error.conflict';

/**
 * The server side of the upgrade ceremony. Each call reads the clock once; the decision itself is
 * `album-upgrade/server.ts`, applied atomically by the album store.
 */
export class UpgradeService {
  readonly #d: UpgradeServiceDeps;

  constructor(deps: UpgradeServiceDeps) {
    this.#d = deps;
  }

  /** The album if the account the request acts as may reach it (access/rules.ts), else null: 404. */
  async #ownAlbum(accountId: string, albumId: string): Promise<AlbumRecord | null> {
    const album = await guard('error.store.unavailable', 'reading an album', () => this.#d.albums.findAlbum(albumId));
    return album !== null && mayReach({ accountId }, albumObject(album), 'write') ? album : null;
  }

  async #status(album: AlbumRecord, now: number): Promise<UpgradeStatus> {
    const inFlight = await guard('error.store.unavailable', 'counting uploads in flight', () =>
      this.#d.uploads.countInFlightUploads(album.id, now),
    );
    return upgradeStatus(album, inFlight, now);
  }

  /** POST /v1/albums/{id}/upgrade: a SignedUpgradeIntent in canonical CBOR enters quiescence. */
  async propose(
    caller: UpgradeCaller,
    albumId: string,
    body: Uint8Array,
  ): Promise<Result<UpgradeStatus, ProposeRefusal>> {
    const now = this.#d.clock.now();
    const parsed = parseSignedUpgradeIntent(body, this.#d.window);
    if (!parsed.ok) return parsed;
    const album = await this.#ownAlbum(caller.accountId, albumId);
    if (album === null) return refuse('error.not_found', 'No such album on this account.');
    const pin = checkAlbumPin(caller.protocolVersion, album.protocolVersion, this.#d.window);
    if (!pin.ok) return pin;
    const { intent } = parsed.value;
    if (
      intent.albumId !== album.id ||
      intent.fromVersion !== album.protocolVersion ||
      intent.toVersion <= intent.fromVersion
    ) {
      return refuse(
        'error.album.intent_mismatch',
        'The intent must name this album, its pin as from_version, and a newer to_version.',
        {
          album_pin: album.protocolVersion,
        },
      );
    }
    const proposer = await guard('error.store.unavailable', 'reading the device directory', () =>
      this.#d.directories.findDevice(caller.actingOwnerId ?? caller.accountId, intent.proposerDevice),
    );
    if (!isDeviceActive(proposer, now) || !verifyHybrid(parsed.value, proposer)) {
      return refuse(
        'error.album.proposer_invalid',
        'The proposer is not an active device of this account, or its signatures do not verify.',
      );
    }
    const outcome = await guard('error.store.unavailable', 'proposing an upgrade intent', () =>
      this.#d.albums.proposeIntent(
        {
          intentId: intent.intentId,
          albumId: album.id,
          fromVersion: intent.fromVersion,
          toVersion: intent.toVersion,
          proposerDevice: intent.proposerDevice,
          deadlineS: intent.deadlineS,
          receivedAt: now,
          expiresAt: upgradeExpiresAt(now, intent.deadlineS),
          intentCbor: parsed.value.intentCbor,
        },
        now,
      ),
    );
    switch (outcome.kind) {
      case 'no_album':
        return refuse('error.not_found', 'No such album on this account.');
      case 'in_flight':
        return refuse('error.album.upgrade_in_flight', 'Another upgrade intent holds this album.', {
          live_intent_id: outcome.liveIntentId,
        });
      case 'reused':
        return refuse('error.conflict', 'This intent id was already used with other content or is no longer live.');
      case 'accepted':
      case 'same': {
        const fresh = await this.#ownAlbum(caller.accountId, albumId);
        return ok(await this.#status(fresh ?? album, now));
      }
    }
  }

  /** GET /v1/albums/{id}/upgrade. Reads are never refused for an old version. */
  async status(accountId: string, albumId: string): Promise<Result<UpgradeStatus, 'error.not_found'>> {
    const now = this.#d.clock.now();
    const album = await this.#ownAlbum(accountId, albumId);
    if (album === null) return refuse('error.not_found', 'No such album on this account.');
    return ok(await this.#status(album, now));
  }

  /** DELETE /v1/albums/{id}/upgrade?intent_id=…: only the live intent's id aborts. */
  async abort(
    caller: UpgradeCaller,
    albumId: string,
    intentId: string,
  ): Promise<Result<void, 'error.not_found' | 'error.conflict' | 'error.protocol.below_album_pin'>> {
    const now = this.#d.clock.now();
    const album = await this.#ownAlbum(caller.accountId, albumId);
    if (album === null) return refuse('error.not_found', 'No such album on this account.');
    const pin = checkAlbumPin(caller.protocolVersion, album.protocolVersion, this.#d.window);
    if (!pin.ok) return pin;
    if (!decideAbort(album, intentId, now)) return refuse('error.conflict', 'That intent does not hold this album.');
    const aborted = await guard('error.store.unavailable', 'aborting an upgrade', () =>
      this.#d.albums.abortIntent(album.id, intentId, now),
    );
    return aborted ? ok(undefined) : refuse('error.conflict', 'That intent does not hold this album.');
  }
}
