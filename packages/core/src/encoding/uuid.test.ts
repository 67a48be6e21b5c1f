import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { toHex } from './bytes.js';
import { isUuidV7, uuidv7, uuidv7Time } from './uuid.js';

describe('uuidv7', () => {
  it('RFC 9562, appendix A.6: the example UUIDv7', () => {
    // unix_ts_ms 0x017F22E279B0, rand_a 0xCC3, rand_b 0x18C4DC0C0C07398F (the variant bits over its top two).
    const random = new Uint8Array([0x0c, 0xc3, 0x18, 0xc4, 0xdc, 0x0c, 0x0c, 0x07, 0x39, 0x8f]);
    expect(uuidv7(0x017f22e279b0, random)).toBe('017f22e2-79b0-7cc3-98c4-dc0c0c07398f');
  });

  it('any time and random bytes: a UUIDv7 carrying that millisecond and those bits, each id its own string', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 48 - 1 }),
        fc.uint8Array({ minLength: 10, maxLength: 10 }),
        (ms, random) => {
          const id = uuidv7(ms + 0.5, random);
          const again = uuidv7(ms, random);
          expect(isUuidV7(id)).toBe(true);
          expect(uuidv7Time(id)).toBe(ms);
          expect(again).toBe(id);
          // The random bits, less the version and variant bits, are the bytes given.
          const hex = id.replace(/-/g, '');
          expect(parseInt(hex.slice(13, 16), 16)).toBe(((random[0]! & 0x0f) << 8) | random[1]!);
          expect(hex.slice(18)).toBe(toHex(random.subarray(3)));
          expect(parseInt(hex.slice(16, 18), 16) & 0x3f).toBe(random[2]! & 0x3f);
        },
      ),
    );
  });

  it('refuses fewer than 10 random bytes', () => {
    expect(() => uuidv7(1, new Uint8Array(9))).toThrow(RangeError);
  });
});
