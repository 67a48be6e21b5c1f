import { canonicalCbor } from '../encoding/cbor.js';
import { sha256Hex } from '../encoding/bytes.js';

/** The closed set of platform tags a cohort hash may be built for. */
export const PLATFORM_TAGS = ['ios', 'android', 'macos', 'windows', 'linux'] as const;
export type PlatformTag = (typeof PLATFORM_TAGS)[number];

export const COHORT_DOMAIN = 'svc-device-cohort/v1';

/**
 * The advisory device-cohort hash a client sends when it opens a session: SHA-256 over the
 * canonical CBOR array [domain, user_id, platform_tag, primary_id], lower-case hex.
 *
 * The user id is folded in so one device under two accounts gives two unlinkable values, and the
 * CBOR array (not string concatenation) keeps the fields from bleeding into each other.
 *
 * @example
 * const hash = cohortHash({ userId: account.id, platform: 'linux', primaryId: machineId });
 */
export function cohortHash(input: { userId: string; platform: PlatformTag; primaryId: string }): string {
  if (!(PLATFORM_TAGS as readonly string[]).includes(input.platform)) {
    throw new RangeError(`unknown platform tag: ${input.platform}`);
  }
  return sha256Hex(canonicalCbor([COHORT_DOMAIN, input.userId, input.platform, input.primaryId]));
}

/**
 * Reads a client-asserted cohort value. Anything but 64 lower-case hex characters is treated
 * exactly as absent: the value is advisory, so a bad one must not change the outcome.
 */
export function readCohortHash(value: unknown): string | null {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value) ? value : null;
}
