import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HttpProblem } from './problem.js';
import { isWellFormedText, parseJsonObject } from './strict-json.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

/** The problem code `parseJsonObject` throws, or 'accepted'. */
function outcome(bytes: Uint8Array): string {
  try {
    parseJsonObject(bytes);
    return 'accepted';
  } catch (e) {
    if (e instanceof HttpProblem) return e.code;
    throw e;
  }
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every path (as a list of keys and indices) to an object with at least one member. */
function objectPaths(v: Json, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(v)) return v.flatMap((x, i) => objectPaths(x, [...at, i]));
  if (v !== null && typeof v === 'object') {
    const here = Object.keys(v).length > 0 ? [at] : [];
    return [...here, ...Object.entries(v).flatMap(([k, x]) => objectPaths(x, [...at, k]))];
  }
  return [];
}

/** A name written with every character as a \u escape: the same name to any JSON reader. */
const escapedName = (k: string): string =>
  `"${[...k].map((ch) => [...ch].map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')).join('')}"`;

/**
 * Serialises like JSON.stringify, except that the object at `dup` writes its first member a second
 * time (under an escaped spelling when `escaped`), with `extra` as the repeated value.
 */
function withDuplicate(
  v: Json,
  dup: (string | number)[],
  extra: Json,
  escaped: boolean,
  at: (string | number)[] = [],
): string {
  if (Array.isArray(v)) return `[${v.map((x, i) => withDuplicate(x, dup, extra, escaped, [...at, i])).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const members = Object.entries(v).map(
      ([k, x]) => `${JSON.stringify(k)}:${withDuplicate(x, dup, extra, escaped, [...at, k])}`,
    );
    if (at.length === dup.length && at.every((p, i) => p === dup[i])) {
      const first = Object.keys(v)[0]!;
      members.push(`${escaped ? escapedName(first) : JSON.stringify(first)}:${JSON.stringify(extra)}`);
    }
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(v);
}

const loneSurrogate = fc
  .oneof(fc.integer({ min: 0xd800, max: 0xdbff }), fc.integer({ min: 0xdc00, max: 0xdfff }))
  .map((c) => String.fromCharCode(c));
/** A string holding at least one lone surrogate (the neighbours cannot pair with it). */
const illFormed = fc
  .tuple(fc.string({ maxLength: 8 }), loneSurrogate, fc.string({ maxLength: 8 }))
  .map(([a, s, b]) => `${a}${s}${b}`)
  .filter((s) => {
    // An oracle independent of the reader: encodeURIComponent throws on a lone surrogate.
    try {
      encodeURIComponent(s);
      return false;
    } catch {
      return true;
    }
  });

describe('strict JSON body reader', () => {
  it('accepts any JSON object with unique names and well-formed strings, reading it as JSON.parse does', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (obj) => {
        const text = JSON.stringify(obj);
        expect(parseJsonObject(enc(text))).toEqual(JSON.parse(text));
      }),
    );
  });

  it('refuses every top level that is not an object', () => {
    const notObject = fc.oneof(
      fc.constant(null),
      fc.boolean(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.string(),
      fc.array(fc.jsonValue()),
    );
    fc.assert(
      fc.property(notObject, fc.constantFrom('', ' ', '\n\t'), (value, ws) => {
        expect(outcome(enc(ws + JSON.stringify(value) + ws))).toBe('error.request.invalid');
      }),
    );
  });

  it('refuses a duplicated member name at any depth, however it is spelt', () => {
    const doc = fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 4 }), { minKeys: 1 });
    fc.assert(
      fc.property(doc, fc.nat(), fc.jsonValue({ maxDepth: 1 }), fc.boolean(), (obj, pick, extra, escaped) => {
        const paths = objectPaths(obj as Json);
        const dup = paths[pick % paths.length]!;
        const text = withDuplicate(obj as Json, dup, extra as Json, escaped);
        expect(outcome(enc(text))).toBe('error.request.invalid');
      }),
    );
  });

  it('refuses a lone surrogate escape in any value or member name, at any depth', () => {
    fc.assert(
      fc.property(illFormed, fc.boolean(), fc.nat({ max: 4 }), (bad, asName, depth) => {
        // JSON.stringify writes a lone surrogate as its \u escape (well-formed JSON.stringify).
        let inner = asName ? `{${JSON.stringify(bad)}:1}` : `{"v":${JSON.stringify(bad)}}`;
        expect(inner).toMatch(/\\ud[89a-f][0-9a-f]{2}/);
        for (let d = 0; d < depth; d++) inner = d % 2 === 0 ? `{"x":[${inner}]}` : `{"y":${inner}}`;
        expect(outcome(enc(inner))).toBe('error.request.invalid');
      }),
    );
  });

  it('accepts surrogate pairs, escaped or raw, and refuses raw (CESU-8) surrogates and other bad UTF-8', () => {
    expect(parseJsonObject(enc('{"p":"\\ud83d\\ude00"}'))).toEqual({ p: '😀' });
    expect(parseJsonObject(enc('{"p":"😀"}'))).toEqual({ p: '😀' });
    expect(parseJsonObject(enc('{"\\ufffd":"\\ufffd"}'))).toEqual({ '\ufffd': '\ufffd' });
    const raw = (bytes: number[]) => new Uint8Array([...enc('{"p":"'), ...bytes, ...enc('"}')]);
    expect(outcome(raw([0xed, 0xa0, 0x80]))).toBe('error.request.invalid'); // U+D800 as UTF-8
    expect(outcome(raw([0xed, 0xbf, 0xbf]))).toBe('error.request.invalid'); // U+DFFF
    expect(outcome(raw([0xff]))).toBe('error.request.invalid');
    expect(outcome(enc('{"p":"\\udc00\\ud800"}'))).toBe('error.request.invalid'); // reversed pair
  });

  it('agrees with an independent well-formedness oracle', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        let oracle = true;
        try {
          encodeURIComponent(s);
        } catch {
          oracle = false;
        }
        expect(isWellFormedText(s)).toBe(oracle);
      }),
    );
  }, 30_000);

  it('treats names in sibling and nested objects as distinct, and strings that look like names as values', () => {
    expect(parseJsonObject(enc('{"a":{"a":1},"b":[{"a":2},{"a":3}],"c":"a","d":["a","a"]}'))).toEqual({
      a: { a: 1 },
      b: [{ a: 2 }, { a: 3 }],
      c: 'a',
      d: ['a', 'a'],
    });
    expect(outcome(enc('{"a":1,"\\u0061":2}'))).toBe('error.request.invalid');
    expect(outcome(enc('{"k":"x\\"","k":1}'))).toBe('error.request.invalid');
    expect(outcome(enc('{"a":1}x'))).toBe('error.request.invalid');
  });
});
