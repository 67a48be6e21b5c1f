import { toHex } from './bytes.js';

/** A UUID in its lowercase hyphenated form (ids on the wire). */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UUID = UUID_PATTERN;
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** RFC 9562 UUIDv7 from an explicit time and 10 random bytes (time and randomness come from ports). */
export function uuidv7(nowMs: number, random: Uint8Array): string {
  if (random.length < 10) throw new RangeError('uuidv7 needs 10 random bytes');
  const b = new Uint8Array(16);
  let t = Math.floor(nowMs);
  for (let i = 5; i >= 0; i--) {
    b[i] = t % 256;
    t = Math.floor(t / 256);
  }
  b.set(random.subarray(0, 10), 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = toHex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
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
