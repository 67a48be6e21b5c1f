import type { DeviceDirectoryStore, DeviceEntry, DirectoryRecord, PublishOutcome } from '../ports/device-directory.js';
import type {
  RevokeAllAdmission,
  RevokeAllChallenge,
  RevokeAllChallengeStore,
} from '../ports/revoke-all-challenges.js';
import { decidePublication } from '../devices/directory.js';
import { revokeAllChallengeLapsed } from '../devices/revoke-all.js';

/** In-memory reference implementation of the device directory and revoke-all challenge ports. */
export class MemoryDeviceStore implements DeviceDirectoryStore, RevokeAllChallengeStore {
  readonly directories = new Map<string, DirectoryRecord>();
  readonly challenges = new Map<string, RevokeAllChallenge>();

  async publishDirectory(directory: DirectoryRecord): Promise<PublishOutcome> {
    const outcome = decidePublication(this.directories.get(directory.accountId) ?? null, directory);
    if (outcome !== 'published') return outcome;
    this.directories.set(directory.accountId, directory);
    return 'published';
  }
  async findDirectory(accountId: string): Promise<DirectoryRecord | null> {
    return this.directories.get(accountId) ?? null;
  }
  async findDevice(accountId: string, deviceId: string): Promise<DeviceEntry | null> {
    return this.directories.get(accountId)?.devices.find((d) => d.deviceId === deviceId) ?? null;
  }
  async findDeviceAddedAt(accountId: string, deviceId: string): Promise<number | null> {
    return (await this.findDevice(accountId, deviceId))?.addedAt ?? null;
  }
  async findIdentityAnchor(accountId: string): Promise<Uint8Array | null> {
    return this.directories.get(accountId)?.identityKey ?? null;
  }

  async insertRevokeAllChallenge(
    challenge: RevokeAllChallenge,
    now: number,
    admit: (expiries: readonly number[]) => RevokeAllAdmission,
  ): Promise<RevokeAllAdmission> {
    for (const [hash, c] of this.challenges) if (revokeAllChallengeLapsed(c, now)) this.challenges.delete(hash);
    const expiries = [...this.challenges.values()]
      .filter((c) => c.accountId === challenge.accountId)
      .map((c) => c.expiresAt);
    const admission = admit(expiries);
    if (admission.admitted) this.challenges.set(challenge.challengeHash, challenge);
    return admission;
  }
  async consumeRevokeAllChallenge(challengeHash: string): Promise<RevokeAllChallenge | null> {
    const found = this.challenges.get(challengeHash) ?? null;
    this.challenges.delete(challengeHash);
    return found;
  }
}
