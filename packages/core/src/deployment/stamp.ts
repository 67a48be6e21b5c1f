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

/**
 * What a starting process does about the database's record: start (`ok`), start after recording
 * its own issuer (`adopt_issuer`), or stop because its key or its issuer differs.
 */
export type DeploymentVerdict = 'ok' | 'adopt_issuer' | 'secret_key' | 'issuer';

/**
 * Compares this process's configuration with the database's record. A different key could not
 * open the secrets sealed under the recorded one: always refused (compared in constant time). A
 * different issuer would mint access tokens the other processes refuse, and refuse theirs: refused
 * when the recorded issuer was configured (SVC_BASE_URL). A recorded issuer that was only derived
 * from the port gives way to this process's (a lone server moved to another port, or given its
 * public URL for the first time); a process without SVC_BASE_URL never replaces a configured one.
 */
export function judgeDeployment(
  recorded: DeploymentRecord,
  mine: { keyFingerprint: string; issuer: string; issuerConfigured: boolean },
): DeploymentVerdict {
  if (!constantTimeEqual(utf8(recorded.keyFingerprint), utf8(mine.keyFingerprint))) return 'secret_key';
  if (recorded.issuer === mine.issuer && recorded.issuerConfigured === mine.issuerConfigured) return 'ok';
  if (recorded.issuerConfigured) return recorded.issuer === mine.issuer ? 'ok' : 'issuer';
  return 'adopt_issuer';
}
