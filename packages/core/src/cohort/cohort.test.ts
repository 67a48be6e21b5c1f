import { sha256 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import { toHex } from '../encoding/bytes.js';
import { cohortHash, readCohortHash } from './cohort.js';

/** CBOR text string head for lengths below 24 (major type 3). Built by hand, independent of cborg. */
const text = (s: string): number[] => {
  const b = [...new TextEncoder().encode(s)];
  if (b.length >= 24) return [0x78, b.length, ...b];
  return [0x60 | b.length, ...b];
};

describe('cohortHash', () => {
  it('is SHA-256 over the hand-built canonical CBOR array of the four text strings', () => {
    const userId = '01890a5d-ac96-774b-bcce-b302099a8057';
    const bytes = new Uint8Array([
      0x84,
      ...text('svc-device-cohort/v1'),
      ...text(userId),
      ...text('linux'),
      ...text('machine-id-123'),
    ]);
    // 0x84 = array of 4; the user id is 36 bytes so its head is 0x78 0x24.
    expect(bytes[0]).toBe(0x84);
    expect(bytes[1]).toBe(0x74); // text of 20 bytes: "svc-device-cohort/v1"
    expect(cohortHash({ userId, platform: 'linux', primaryId: 'machine-id-123' })).toBe(toHex(sha256(bytes)));
  });
  it('differs per account for the same device, and per platform', () => {
    const a = cohortHash({ userId: 'a', platform: 'ios', primaryId: 'seed' });
    expect(cohortHash({ userId: 'b', platform: 'ios', primaryId: 'seed' })).not.toBe(a);
    expect(cohortHash({ userId: 'a', platform: 'macos', primaryId: 'seed' })).not.toBe(a);
    // No concatenation ambiguity: moving a character between fields changes the hash.
    expect(cohortHash({ userId: 'ab', platform: 'ios', primaryId: 'c' })).not.toBe(
      cohortHash({ userId: 'a', platform: 'ios', primaryId: 'bc' }),
    );
  });
  it('refuses a platform outside the closed set', () => {
    expect(() => cohortHash({ userId: 'a', platform: 'beos' as never, primaryId: 'x' })).toThrow(RangeError);
  });
  it('reads only 64 lower-case hex characters; anything else is absent', () => {
    expect(readCohortHash('a'.repeat(64))).toBe('a'.repeat(64));
    for (const bad of ['A'.repeat(64), 'a'.repeat(63), 'g'.repeat(64), 42, null, undefined, {}])
      expect(readCohortHash(bad)).toBeNull();
  });
});
