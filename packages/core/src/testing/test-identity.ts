import { ed25519 } from '@noble/curves/ed25519.js';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { canonicalCbor } from '../encoding/cbor.js';
import { toBase64url } from '../encoding/bytes.js';
import { directorySigningMessage } from '../devices/directory.js';
import { logoutAllMessage } from '../devices/revoke-all.js';
import { upgradeIntentMessage } from '../album-upgrade/intent.js';
import { totpRecoveryMessage } from '../second-factor/recovery.js';

const seedOf = (label: string): Uint8Array => sha256(new TextEncoder().encode(label));

/** A device's key pairs, derived from a label so tests are reproducible. */
export class TestDevice {
  readonly ed25519Secret: Uint8Array;
  readonly ed25519: Uint8Array;
  readonly mldsa65Secret: Uint8Array;
  readonly mldsa65: Uint8Array;
  constructor(
    readonly deviceId: string,
    options: { addedAt?: number } = {},
  ) {
    this.ed25519Secret = seedOf(`ed:${deviceId}`);
    this.ed25519 = ed25519.getPublicKey(this.ed25519Secret);
    const pq = ml_dsa65.keygen(seedOf(`pq:${deviceId}`));
    this.mldsa65Secret = pq.secretKey;
    this.mldsa65 = pq.publicKey;
    this.addedAt = options.addedAt ?? 0;
  }
  addedAt: number;

  /** The device map as it appears in a directory. */
  entry(): Record<string, unknown> {
    return { device_id: this.deviceId, ed25519: this.ed25519, mldsa65: this.mldsa65, added_at: this.addedAt };
  }

  /**
   * A SignedUpgradeIntent body (canonical CBOR), hybrid-signed. `deadline_s` is left out when
   * undefined. `tamper` lets a test break one signature.
   */
  signUpgradeIntent(
    intent: {
      album_id: string;
      from_version: string;
      to_version: string;
      intent_id: string;
      proposer_device?: string;
      deadline_s?: number;
    },
    options: { tamper?: 'ed25519' | 'mldsa65' } = {},
  ): Uint8Array {
    const map: Record<string, unknown> = { proposer_device: this.deviceId, ...intent };
    if (map.deadline_s === undefined) delete map.deadline_s;
    const message = upgradeIntentMessage(map);
    const sigEd = ed25519.sign(message, this.ed25519Secret);
    const sigPq = ml_dsa65.sign(message, this.mldsa65Secret);
    if (options.tamper === 'ed25519') sigEd[0]! ^= 1;
    if (options.tamper === 'mldsa65') sigPq[10]! ^= 1;
    return canonicalCbor({ intent: map, sig_ed25519: sigEd, sig_mldsa65: sigPq });
  }
}

/** An account's identity key, able to sign directories and revoke-all proofs. */
export class TestIdentity {
  readonly secret: Uint8Array;
  readonly publicKey: Uint8Array;
  constructor(label: string) {
    this.secret = seedOf(`identity:${label}`);
    this.publicKey = ed25519.getPublicKey(this.secret);
  }

  /** A signed directory body (canonical CBOR) for `accountId`. */
  signDirectory(
    accountId: string,
    seq: number,
    devices: readonly (TestDevice | Record<string, unknown>)[],
  ): Uint8Array {
    const entries = devices.map((d) => (d instanceof TestDevice ? d.entry() : d));
    const sig = ed25519.sign(directorySigningMessage(accountId, this.publicKey, seq, entries), this.secret);
    return canonicalCbor({ identity_key: this.publicKey, seq, devices: entries, sig });
  }

  /** The base64url signature redeeming a revoke-all challenge (itself base64url). */
  signLogoutAll(accountId: string, challenge: Uint8Array): string {
    return toBase64url(ed25519.sign(logoutAllMessage(accountId, challenge), this.secret));
  }

  /** The base64url signature answering a sign-in challenge without the second factor (recover-totp). */
  signTotpRecovery(accountId: string, challenge: Uint8Array): string {
    return toBase64url(ed25519.sign(totpRecoveryMessage(accountId, challenge), this.secret));
  }
}
