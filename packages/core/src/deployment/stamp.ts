import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { constantTimeEqual, toHex, utf8 } from '../encoding/bytes.js';
import type { DeploymentRecord } from '../ports/deployment.js';

const FINGERPRINT_LABEL = 'strongroom/secret-key-fingerprint/v1';

/**
 * A keyed fingerprint of the server key: HMAC-SHA-256 of a fixed label under the key, in hex. It
 * tells two keys apart without revealing either (nothing short of the key itself reproduces it).
 */
export function secretKeyFingerprint(key: Uint8Array): string {
  return toHex(hmac(sha256, key, utf8(FINGERPRINT_LABEL)));
}

/** How this process differs from what the database recorded, if it does. */
export type DeploymentMismatch = 'secret_key' | 'issuer';

/**
 * Compares this process's configuration with the database's record. A different key could not
 * open the secrets sealed under the recorded one; a different issuer would mint access tokens the
 * other processes refuse (and refuse theirs). The key is compared in constant time.
 */
export function compareDeployment(recorded: DeploymentRecord, mine: { keyFingerprint: string; issuer: string }): DeploymentMismatch | null {
  if (!constantTimeEqual(utf8(recorded.keyFingerprint), utf8(mine.keyFingerprint))) return 'secret_key';
  if (recorded.issuer !== mine.issuer) return 'issuer';
  return null;
}
