/** A UUID in its lowercase hyphenated form (ids on the wire). */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UUID = UUID_PATTERN;
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const HEX_DIGITS = new TextEncoder().encode('0123456789abcdef');
/** Where each of a UUID's 16 bytes starts in its 36 characters (hyphens at 8, 13, 18 and 23). */
const BYTE_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
/**
 * A UUID's characters as ASCII, written in place and read out as one string: every upload and
 * every access token takes a fresh id, and building it from a byte array, its hex and five slices
 * made a kilobyte of short-lived garbage each time. Filled and read in one synchronous call.
 */
const TEXT = new Uint8Array(36).fill(0x2d);
const ASCII = new TextDecoder();

function putByte(index: number, byte: number): void {
  const at = BYTE_AT[index]!;
  TEXT[at] = HEX_DIGITS[byte >> 4]!;
  TEXT[at + 1] = HEX_DIGITS[byte & 15]!;
}

/** RFC 9562 UUIDv7 from an explicit time and 10 random bytes (time and randomness come from ports). */
export function uuidv7(nowMs: number, random: Uint8Array): string {
  if (random.length < 10) throw new RangeError('uuidv7 needs 10 random bytes');
  // The 48-bit millisecond count, as its top 16 bits and its low 32.
  const ms = Math.floor(nowMs);
  const high = Math.floor(ms / 2 ** 32);
  const low = ms >>> 0;
  putByte(0, (high >>> 8) & 255);
  putByte(1, high & 255);
  putByte(2, low >>> 24);
  putByte(3, (low >>> 16) & 255);
  putByte(4, (low >>> 8) & 255);
  putByte(5, low & 255);
  putByte(6, (random[0]! & 0x0f) | 0x70); // version 7
  putByte(7, random[1]!);
  putByte(8, (random[2]! & 0x3f) | 0x80); // variant 10
  for (let i = 3; i < 10; i++) putByte(6 + i, random[i]!);
  return ASCII.decode(TEXT);
}

/** The millisecond timestamp a UUIDv7 carries, or null when the string is not a UUIDv7. */
export function uuidv7Time(id: string): number | null {
  if (!UUID_V7.test(id)) return null;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

export function isUuid(id: string): boolean {
  return UUID.test(id);
}

export function isUuidV7(id: string): boolean {
  return UUID_V7.test(id);
}
