/**
 * The one `Range: bytes=…` a blob download honours (RFC 9110 §14). What a server may ignore, it
 * ignores (the answer is then the whole blob, 200): another unit, a malformed header, and more than
 * one range (multipart/byteranges answers are not offered: players and clients seek with one range,
 * and a list of ranges could ask for the same bytes many times over).
 */
export type RangeAnswer =
  | { readonly kind: 'whole' }
  | { readonly kind: 'part'; readonly start: number; readonly end: number }
  | { readonly kind: 'unsatisfiable' };

const WHOLE: RangeAnswer = { kind: 'whole' };
const UNSATISFIABLE: RangeAnswer = { kind: 'unsatisfiable' };
const SPEC = /^(?:(\d+)-(\d*)|-(\d+))$/;

/** The answer to `header` (undefined when absent) for a blob of `size` bytes. `end` is inclusive. */
export function resolveRange(header: string | undefined, size: number): RangeAnswer {
  if (header === undefined) return WHOLE;
  const eq = header.indexOf('=');
  if (eq < 0 || header.slice(0, eq).trim().toLowerCase() !== 'bytes') return WHOLE;
  const specs = header
    .slice(eq + 1)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (specs.length !== 1) return WHOLE;
  const m = SPEC.exec(specs[0]!);
  if (m === null) return WHOLE;
  if (m[3] !== undefined) {
    // Suffix: the last N bytes (all of them when N passes the size); none of an empty blob.
    const n = Number(m[3]);
    if (n === 0 || size === 0) return UNSATISFIABLE;
    return { kind: 'part', start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const last = m[2] === '' ? Infinity : Number(m[2]);
  if (last < start) return WHOLE;
  if (start >= size) return UNSATISFIABLE;
  return { kind: 'part', start, end: Math.min(last, size - 1) };
}
