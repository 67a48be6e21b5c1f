import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromBase64url, fromHex, toBase64url, toHex, utf8ToBase64url } from './bytes.js';

// Node's Buffer is the reference the table-driven encoders are held to (tests may use it; core may not).
describe('byte encodings', () => {
  it('toBase64url matches Buffer for every length and byte value', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expect(toBase64url(bytes)).toBe(Buffer.from(bytes).toString('base64url'));
      }),
      { numRuns: 2000 },
    );
  });

  it('fromBase64url inverts toBase64url and refuses non-canonical or foreign spellings', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        expect(fromBase64url(toBase64url(bytes))).toEqual(bytes);
      }),
    );
    expect(fromBase64url('AB')).toBeNull(); // trailing bits set: 'AA' is the one spelling of 0x00
    expect(fromBase64url('AA==')).toBeNull();
    expect(fromBase64url('A+/A')).toBeNull();
    expect(fromBase64url('A')).toBeNull();
  });

  it('utf8ToBase64url encodes the text as UTF-8 first', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (text) => {
        expect(utf8ToBase64url(text)).toBe(Buffer.from(text, 'utf8').toString('base64url'));
      }),
    );
  });

  it('toHex matches Buffer and fromHex inverts it', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        const hex = toHex(bytes);
        expect(hex).toBe(Buffer.from(bytes).toString('hex'));
        expect(fromHex(hex)).toEqual(bytes);
      }),
    );
  });
});
