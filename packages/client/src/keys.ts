import { ed25519 } from '@noble/curves/ed25519.js';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import { randomBytes } from '@noble/hashes/utils.js';
import {
  canonicalCbor,
  directorySigningMessage,
  fromBase64url,
  isDeviceId,
  logoutAllMessage,
  toBase64url,
  upgradeIntentMessage,
} from '@strongroom/core';

/**
 * The account's identity anchor: an Ed25519 key that signs the device directory and the revoke-all
 * proof. The first directory the server accepts pins its public key; keep the 32-byte secret (or
 * the seed it came from) in the platform's key store: losing it means losing revoke-all.
 */
export class IdentityKey {
  /** The Ed25519 public key (32 bytes) the server pins. */
  readonly publicKey: Uint8Array;

  private constructor(private readonly secret: Uint8Array) {
    this.publicKey = ed25519.getPublicKey(secret);
  }

  /** A fresh identity key from the platform's secure random source. */
  static generate(): IdentityKey {
    return new IdentityKey(randomBytes(32));
  }

  /** The identity key of a stored 32-byte Ed25519 secret (see {@link IdentityKey.exportSecret}). */
  static fromSecret(secret: Uint8Array): IdentityKey {
    if (secret.length !== 32) throw new RangeError('an Ed25519 secret is 32 bytes');
    return new IdentityKey(secret.slice());
  }

  /** The 32-byte secret, for the platform's key store. Never send it anywhere. */
  exportSecret(): Uint8Array {
    return this.secret.slice();
  }

  /**
   * A signed device directory for `accountId`, as the canonical CBOR body that
   * `PUT /v1/devices/directory` takes. `seq` must grow with every publication; `devices` is the
   * whole list (a device left out is removed).
   */
  signDirectory(accountId: string, seq: number, devices: readonly DirectoryDevice[]): Uint8Array {
    if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError('seq is a whole number');
    const entries = devices.map((d) => directoryEntry(d));
    const sig = ed25519.sign(directorySigningMessage(accountId, this.publicKey, seq, entries), this.secret);
    return canonicalCbor({ identity_key: this.publicKey, seq, devices: entries, sig });
  }

  /**
   * The revoke-all proof: the base64url signature over a challenge from
   * `POST /v1/auth/logout/all/challenge`, for `POST /v1/auth/logout/all`.
   */
  signRevokeAll(accountId: string, challenge: string): string {
    const bytes = fromBase64url(challenge);
    if (bytes === null) throw new RangeError('the challenge is not base64url');
    return toBase64url(ed25519.sign(logoutAllMessage(accountId, bytes), this.secret));
  }
}

/** One device as listed in a directory: its id, both public keys, and when it may start writing. */
export interface DirectoryDevice {
  /** 1 to 128 visible ASCII characters. */
  readonly deviceId: string;
  /** Ed25519 public key, 32 bytes. */
  readonly ed25519: Uint8Array;
  /** ML-DSA-65 public key, 1,952 bytes. */
  readonly mldsa65: Uint8Array;
  /** Unix seconds from which the server admits the device's writes (not after the server's clock). */
  readonly addedAt: number;
}

function directoryEntry(d: DirectoryDevice): Record<string, unknown> {
  if (!isDeviceId(d.deviceId)) throw new RangeError('a device id is 1 to 128 visible ASCII characters');
  if (!Number.isSafeInteger(d.addedAt) || d.addedAt < 0) throw new RangeError('added_at is a whole number');
  return { device_id: d.deviceId, ed25519: d.ed25519, mldsa65: d.mldsa65, added_at: d.addedAt };
}

/** What a device proposes when it asks to move an album to a newer protocol version. */
export interface UpgradeIntentInput {
  /** The album (UUIDv7). */
  readonly albumId: string;
  /** The album's current pin. */
  readonly fromVersion: string;
  readonly toVersion: string;
  /** A fresh UUIDv7 naming this intent (see `uuidv7` from this package). */
  readonly intentId: string;
  /** Seconds the album may stay quiescent; the server's default (7 days) when left out. */
  readonly deadlineS?: number;
}

/** The secret halves of a device's key pairs, for the platform's key store. */
export interface DeviceSecrets {
  readonly ed25519: Uint8Array;
  /** The 32-byte ML-DSA-65 key generation seed. */
  readonly mldsa65Seed: Uint8Array;
}

/**
 * A device's hybrid signing keys (Ed25519 + ML-DSA-65, crypto suite 1). A device signs upgrade
 * intents with both; the server accepts only intents whose two signatures verify under the keys
 * the directory lists for it.
 */
export class DeviceKeys {
  readonly ed25519: Uint8Array;
  readonly mldsa65: Uint8Array;
  readonly #mldsaSecret: Uint8Array;

  private constructor(
    readonly deviceId: string,
    private readonly secrets: DeviceSecrets,
  ) {
    if (!isDeviceId(deviceId)) throw new RangeError('a device id is 1 to 128 visible ASCII characters');
    this.ed25519 = ed25519.getPublicKey(secrets.ed25519);
    const pq = ml_dsa65.keygen(secrets.mldsa65Seed);
    this.mldsa65 = pq.publicKey;
    this.#mldsaSecret = pq.secretKey;
  }

  /** Fresh keys for a device from the platform's secure random source. */
  static generate(deviceId: string): DeviceKeys {
    return new DeviceKeys(deviceId, { ed25519: randomBytes(32), mldsa65Seed: randomBytes(32) });
  }

  /** The keys of stored secrets (see {@link DeviceKeys.exportSecrets}). */
  static fromSecrets(deviceId: string, secrets: DeviceSecrets): DeviceKeys {
    if (secrets.ed25519.length !== 32 || secrets.mldsa65Seed.length !== 32)
      throw new RangeError('device secrets are 32 bytes each');
    return new DeviceKeys(deviceId, { ed25519: secrets.ed25519.slice(), mldsa65Seed: secrets.mldsa65Seed.slice() });
  }

  /** The secrets, for the platform's key store. Never send them anywhere. */
  exportSecrets(): DeviceSecrets {
    return { ed25519: this.secrets.ed25519.slice(), mldsa65Seed: this.secrets.mldsa65Seed.slice() };
  }

  /** This device's directory entry, writing from `addedAt` (Unix seconds) on. */
  entry(addedAt: number): DirectoryDevice {
    return { deviceId: this.deviceId, ed25519: this.ed25519, mldsa65: this.mldsa65, addedAt };
  }

  /**
   * A hybrid-signed upgrade intent, as the canonical CBOR body that
   * `POST /v1/albums/{album_id}/upgrade` takes. This device is the proposer.
   */
  signUpgradeIntent(input: UpgradeIntentInput): Uint8Array {
    const intent: Record<string, unknown> = {
      album_id: input.albumId,
      from_version: input.fromVersion,
      to_version: input.toVersion,
      intent_id: input.intentId,
      proposer_device: this.deviceId,
    };
    if (input.deadlineS !== undefined) intent.deadline_s = input.deadlineS;
    const message = upgradeIntentMessage(intent);
    return canonicalCbor({
      intent,
      sig_ed25519: ed25519.sign(message, this.secrets.ed25519),
      sig_mldsa65: ml_dsa65.sign(message, this.#mldsaSecret),
    });
  }
}
