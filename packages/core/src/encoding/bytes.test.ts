import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  base64urlInto,
  base64urlLength,
  fromBase64url,
  fromHex,
  toBase64url,
  toHex,
  utf8ToBase64url,
} from './bytes.js';

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

  it('base64urlInto writes the same characters as ASCII bytes, exactly base64urlLength of them, where it is told', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.nat({ max: 5 }), (bytes, at) => {
        const expected = Buffer.from(bytes).toString('base64url');
        expect(base64urlLength(bytes.length)).toBe(expected.length);
        const out = new Uint8Array(at + expected.length + 3).fill(0x21);
        expect(base64urlInto(bytes, out, at)).toBe(at + expected.length);
        expect(Buffer.from(out.subarray(at, at + expected.length)).toString('latin1')).toBe(expected);
        // Nothing before or after the span is touched.
        expect([...out.subarray(0, at), ...out.subarray(at + expected.length)].every((b) => b === 0x21)).toBe(true);
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
    expect(fromBase64url('AAA=')).toBeNull();
    expect(fromBase64url('AAé_')).toBeNull();
    expect(fromBase64url('')).toEqual(new Uint8Array(0));
  });

  it('fromBase64url accepts a string exactly when it is the canonical unpadded spelling of its bytes', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const near = fc.string({ unit: fc.constantFrom(...alphabet, '=', '+', '/', ' ', 'é', '\u0100'), maxLength: 24 });
    fc.assert(
      fc.property(fc.oneof(near, fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 24 })), (text) => {
        const decoded = Buffer.from(text, 'base64url');
        const canonical = /^[A-Za-z0-9_-]*$/.test(text) && decoded.toString('base64url') === text;
        const got = fromBase64url(text);
        if (canonical) expect(got).toEqual(new Uint8Array(decoded));
        else expect(got).toBeNull();
      }),
      { numRuns: 3000 },
    );
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
