import { HttpProblem } from './problem.js';

/**
 * The one JSON reading every request body goes through (I-JSON, RFC 7493). `JSON.parse` alone
 * lets the last of two equal member names win and turns `"\ud800"` into a string that no encoder
 * can write back, so two parsers (or two code paths) could read one body differently. This
 * reader refuses, as 400 `error.request.invalid`:
 * - bytes that are not UTF-8 (this includes an encoded lone surrogate, `ED A0 80`);
 * - text that is not JSON;
 * - a member name that occurs twice in one object, at any depth, compared after unescaping
 *   (`{"a":1,"\u0061":2}` is a duplicate);
 * - a string, member names included, holding a lone surrogate (escaped: raw ones are caught as
 *   bad UTF-8);
 * - a top level that is not an object (array, string, number, boolean, null).
 *
 * The native parser does the parsing; one linear scan over the (then known-valid) text checks
 * what it cannot.
 */
export function parseJsonObject(raw: Uint8Array): Record<string, unknown> {
  const text = decodeUtf8(raw);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid('The body is not valid JSON.');
  }
  const problem = scanStrict(text);
  if (problem !== null) throw invalid(problem);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw invalid('The body must be a JSON object.');
  return parsed as Record<string, unknown>;
}

const invalid = (detail: string): HttpProblem => new HttpProblem('error.request.invalid', detail);

function decodeUtf8(raw: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(raw);
  } catch {
    throw invalid('The body is not well-formed UTF-8.');
  }
}

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether a string is well-formed Unicode (`String.prototype.isWellFormed`, ES2024). */
export function isWellFormedText(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

type Frame = { readonly object: true; readonly names: Set<string>; expectName: boolean } | { readonly object: false };

/**
 * Walks valid JSON text once: finds every string token, unescapes those that need it, checks
 * well-formedness, and checks member names for duplicates per object. Returns why the text is
 * refused, or null. Only called on text `JSON.parse` accepted, so the grammar is not re-checked.
 */
function scanStrict(text: string): string | null {
  const stack: Frame[] = [];
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      let j = i + 1;
      let escaped = false;
      while (true) {
        const c = text.charCodeAt(j);
        if (c === 0x5c /* \ */) {
          escaped = true;
          j += 2;
        } else if (c === 0x22) break;
        else j++;
      }
      const token = text.slice(i, j + 1);
      const value = escaped ? (JSON.parse(token) as string) : token.slice(1, -1);
      if (escaped && !isWellFormedText(value)) return 'A string holds a lone surrogate (not well-formed Unicode).';
      const top = stack[stack.length - 1];
      if (top?.object && top.expectName) {
        if (top.names.has(value)) return `The member name ${JSON.stringify(value)} occurs twice in one object.`;
        top.names.add(value);
        top.expectName = false;
      }
      i = j;
    } else if (ch === 0x7b /* { */) stack.push({ object: true, names: new Set(), expectName: true });
    else if (ch === 0x5b /* [ */) stack.push({ object: false });
    else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) stack.pop();
    else if (ch === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.object) top.expectName = true;
    }
  }
  return null;
}
