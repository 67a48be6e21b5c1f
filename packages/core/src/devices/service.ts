import { decideOwnIdentity } from '../sponsorship/rules.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { DeviceDirectoryStore, DeviceEntry, DirectoryRecord } from '../ports/device-directory.js';
import { acceptDirectory, isDeviceActive, MAX_DIRECTORY_SEQ_STEP } from './directory.js';
import type { Principal, SessionService } from '../session/service.js';

export interface DeviceDirectoryServiceDeps {
  readonly directories: DeviceDirectoryStore;
  readonly clock: Clock;
  /** The recent-authentication gate (SessionService): fixing the first identity anchor is a sign-in change. */
  readonly sessions: Pick<SessionService, 'requireRecentAuthentication'>;
}

export type PublishRefusal =
  | 'error.request.invalid'
  | 'error.device.invalid_key'
  | 'error.device.directory_invalid'
  | 'error.conflict'
  | 'error.auth.reauthentication_required';

/** Publishing and reading the account's signed device directory (the identity anchor's home). */
export class DeviceDirectoryService {
  readonly #d: DeviceDirectoryServiceDeps;

  constructor(deps: DeviceDirectoryServiceDeps) {
    this.#d = deps;
  }

  /**
   * Accepts a signed directory body. The first accepted one fixes the identity anchor; later ones
   * must carry the anchor and a higher `seq` (checked atomically by the store). The first one
   * decides who can revoke every session and recover the second factor, so it needs a recent
   * sign-in; once an anchor exists none can be fixed again, so later ones do not.
   */
  async publish(
    principal: Principal,
    body: Uint8Array,
  ): Promise<Result<DirectoryRecord, PublishRefusal | 'error.sponsored.no_identity'>> {
    const own = decideOwnIdentity(principal);
    if (!own.ok) return own;
    const { accountId } = principal;
    const now = this.#d.clock.now();
    const accepted = acceptDirectory(accountId, body, now);
    if (!accepted.ok) return accepted;
    const anchor = await guard('error.store.unavailable', 'reading the identity anchor', () =>
      this.#d.directories.findIdentityAnchor(accountId),
    );
    if (anchor === null) {
      const recent = await this.#d.sessions.requireRecentAuthentication(principal, 'first_identity_anchor');
      if (!recent.ok) return recent;
    }
    const outcome = await guard('error.store.unavailable', 'publishing a device directory', () =>
      this.#d.directories.publishDirectory(accepted.value),
    );
    if (outcome === 'anchor_mismatch') {
      return refuse('error.device.directory_invalid', "The directory is not signed by this account's identity anchor.");
    }
    if (outcome === 'seq_jump') {
      return refuse(
        'error.request.invalid',
        `A publication may raise seq by at most ${MAX_DIRECTORY_SEQ_STEP} (the first counts from 0).`,
      );
    }
    if (outcome === 'stale_seq') {
      const current = await guard('error.store.unavailable', 'reading a device directory', () =>
        this.#d.directories.findDirectory(accountId),
      );
      return refuse('error.conflict', 'A directory with this seq or a higher one is already published.', {
        current_seq: current?.seq ?? null,
      });
    }
    return ok(accepted.value);
  }

  /** The latest accepted directory (its `body` is the signed CBOR as accepted), or null. */
  async current(accountId: string): Promise<DirectoryRecord | null> {
    return guard('error.store.unavailable', 'reading a device directory', () =>
      this.#d.directories.findDirectory(accountId),
    );
  }

  /** The device if it is listed and its `added_at` has arrived on the server clock; else null. */
  async activeDevice(accountId: string, deviceId: string, now: number): Promise<DeviceEntry | null> {
    const device = await guard('error.store.unavailable', 'reading the device directory', () =>
      this.#d.directories.findDevice(accountId, deviceId),
    );
    return isDeviceActive(device, now) ? device : null;
  }
}
