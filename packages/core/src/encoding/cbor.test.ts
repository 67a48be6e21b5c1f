import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from './bytes.js';
import { canonicalCbor, decodeCanonicalCbor } from './cbor.js';

const load = <T>(name: string): T =>
  JSON.parse(readFileSync(new URL(`../../test-vectors/${name}`, import.meta.url), 'utf8')) as T;

interface AppendixItem {
  hex: string;
  json?: unknown;
  kind: string;
  deterministic: boolean;
  js_unsafe_integer?: boolean;
  map_entries?: unknown;
}
const appendix = load<{ examples: AppendixItem[] }>('cbor-rfc8949-appendix-a.json').examples;
const derived = load<{
  deterministic_encodings: { name: string; hex: string; json?: unknown; map_entries?: [unknown, unknown][] }[];
  non_deterministic_or_invalid_inputs: { hex: string; note: string }[];
}>('cbor-deterministic-derived.json');

// The protocol's CBOR holds integers, text, byte strings, arrays and maps: no floats, no bignums.
const inScope = appendix.filter(
  (v) =>
    v.deterministic &&
    ['int', 'text', 'array', 'map', 'simple'].includes(v.kind) &&
    !v.js_unsafe_integer &&
    !v.map_entries &&
    'json' in v,
);

describe('canonical CBOR (RFC 8949 section 4.2.1)', () => {
  it('has in-scope Appendix A vectors to check', () => expect(inScope.length).toBeGreaterThan(25));

  it.each(inScope.map((v) => [v.hex, v] as const))('encodes and accepts Appendix A item %s', (hex, v) => {
    expect(toHex(canonicalCbor(v.json))).toBe(hex);
    expect(decodeCanonicalCbor(fromHex(hex)!)).toEqual(v.json);
  });

  it.each(derived.deterministic_encodings.map((v) => [v.name, v] as const))(
    'encodes the boundary case %s',
    (_name, v) => {
      if (v.map_entries) {
        // Integer map keys: sorted bytewise (RFC 8949), not length-first (RFC 7049). The protocol's
        // own maps have text keys only, so the decoder does not take these.
        expect(toHex(canonicalCbor(new Map(v.map_entries)))).toBe(v.hex);
        return;
      }
      expect(toHex(canonicalCbor(v.json))).toBe(v.hex);
      expect(decodeCanonicalCbor(fromHex(v.hex)!)).toEqual(v.json);
    },
  );

  it.each(derived.non_deterministic_or_invalid_inputs.map((v) => [v.hex, v.note] as const))(
    'refuses %s (%s)',
    (hex) => {
      expect(decodeCanonicalCbor(fromHex(hex)!)).toBeNull();
    },
  );

  it('refuses the indefinite-length forms of Appendix A', () => {
    const indefinite = appendix.filter((v) => !v.deterministic && ['text', 'array', 'map', 'bytes'].includes(v.kind));
    expect(indefinite.length).toBeGreaterThan(0);
    for (const v of indefinite) expect(decodeCanonicalCbor(fromHex(v.hex)!)).toBeNull();
  });

  it('round-trips any protocol-shaped value through its canonical bytes', () => {
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(
        fc.maxSafeInteger(),
        fc.string(),
        fc.uint8Array({ maxLength: 40 }),
        fc.boolean(),
        fc.constant(null),
      ),
      node: fc.oneof(
        { depthSize: 'small' },
        tie('leaf'),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(fc.string({ maxLength: 6 }), tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        const bytes = canonicalCbor(v);
        expect(toHex(canonicalCbor(decodeCanonicalCbor(bytes)))).toBe(toHex(bytes));
      }),
    );
  });
});
