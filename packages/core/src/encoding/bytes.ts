import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';

/** Joins byte chunks into one array (a streamed body, once its size is known to be within limits). */
export { concatBytes } from '@noble/hashes/utils.js';

const ENCODER = new TextEncoder();

const B64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Two base64url characters for each 12-bit value: half the lookups of one table per character. */
const B64URL_PAIRS: string[] = Array.from(
  { length: 4096 },
  (_, i) => B64URL_ALPHABET[i >> 6]! + B64URL_ALPHABET[i & 63]!,
);

/**
 * Unpadded base64url, the wire form of byte strings in JSON. Table-driven: this runs several times
 * for every token minted (header, claims, signature), and going through btoa meant building a
 * binary string and rewriting its alphabet with regular expressions.
 */
export function toBase64url(bytes: Uint8Array): string {
  let out = '';
  const whole = bytes.length - (bytes.length % 3);
  for (let i = 0; i < whole; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += B64URL_PAIRS[n >> 12]! + B64URL_PAIRS[n & 4095]!;
  }
  const rest = bytes.length - whole;
  if (rest === 1) {
    const n = bytes[whole]! << 4;
    out += B64URL_PAIRS[n]!;
  } else if (rest === 2) {
    const n = (bytes[whole]! << 10) | (bytes[whole + 1]! << 2);
    out += B64URL_PAIRS[n >> 6]! + B64URL_ALPHABET[n & 63]!;
  }
  return out;
}

/** The ASCII codes of the alphabet, for writing base64url straight into bytes. */
const B64URL_CODES = Uint8Array.from(B64URL_ALPHABET, (ch) => ch.charCodeAt(0));

/** How many characters the unpadded base64url of `byteLength` bytes takes. */
export function base64urlLength(byteLength: number): number {
  const rest = byteLength % 3;
  return ((byteLength - rest) / 3) * 4 + (rest === 0 ? 0 : rest + 1);
}

/**
 * Writes the unpadded base64url of `bytes` as ASCII into `out` from `at`, and returns the index
 * after the last character. A JWS is signed over these very bytes, so assembling the signing input
 * here skips building its string and encoding that string again.
 */
export function base64urlInto(bytes: Uint8Array, out: Uint8Array, at: number): number {
  let o = at;
  const whole = bytes.length - (bytes.length % 3);
  for (let i = 0; i < whole; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o++] = B64URL_CODES[n >> 18]!;
    out[o++] = B64URL_CODES[(n >> 12) & 63]!;
    out[o++] = B64URL_CODES[(n >> 6) & 63]!;
    out[o++] = B64URL_CODES[n & 63]!;
  }
  const rest = bytes.length - whole;
  if (rest > 0) {
    const n = (bytes[whole]! << 16) | (rest === 2 ? bytes[whole + 1]! << 8 : 0);
    out[o++] = B64URL_CODES[n >> 18]!;
    out[o++] = B64URL_CODES[(n >> 12) & 63]!;
    if (rest === 2) out[o++] = B64URL_CODES[(n >> 6) & 63]!;
  }
  return o;
}

/** The UTF-8 of `text` as unpadded base64url (a JWS's header and claims). */
export function utf8ToBase64url(text: string): string {
  return toBase64url(ENCODER.encode(text));
}

/** Each ASCII code's 6-bit value in the base64url alphabet, or -1. */
const B64URL_VALUES = Int8Array.from({ length: 128 }, (_, code) => B64URL_ALPHABET.indexOf(String.fromCharCode(code)));

/** One character's 6-bit value, or -1 outside the alphabet (non-ASCII included). */
function sextet(text: string, i: number): number {
  const code = text.charCodeAt(i);
  return code < 128 ? B64URL_VALUES[code]! : -1;
}

/**
 * Strict: refuses padding, foreign characters, impossible lengths and set trailing bits (returns
 * null), so one value has exactly one spelling. Table-driven: every refresh decodes its session
 * token, and the regular expressions, atob and re-encoding this used to do were a visible share
 * of it.
 */
export function fromBase64url(text: string): Uint8Array | null {
  const rest = text.length % 4;
  if (rest === 1) return null;
  const out = new Uint8Array((text.length * 3) >> 2);
  const whole = text.length - rest;
  let o = 0;
  for (let i = 0; i < whole; i += 4) {
    const a = sextet(text, i);
    const b = sextet(text, i + 1);
    const c = sextet(text, i + 2);
    const d = sextet(text, i + 3);
    if ((a | b | c | d) < 0) return null;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = n >> 16;
    out[o++] = (n >> 8) & 255;
    out[o++] = n & 255;
  }
  if (rest === 2) {
    const a = sextet(text, whole);
    const b = sextet(text, whole + 1);
    if ((a | b) < 0 || (b & 15) !== 0) return null;
    out[o] = (a << 2) | (b >> 4);
  } else if (rest === 3) {
    const a = sextet(text, whole);
    const b = sextet(text, whole + 1);
    const c = sextet(text, whole + 2);
    if ((a | b | c) < 0 || (c & 3) !== 0) return null;
    const n = (a << 12) | (b << 6) | c;
    out[o] = n >> 10;
    out[o + 1] = (n >> 2) & 255;
  }
  return out;
}

const HEX_PAIRS: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += HEX_PAIRS[bytes[i]!]!;
  return out;
}

export function fromHex(text: string): Uint8Array | null {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(text)) return null;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return out;
}

export function utf8(text: string): Uint8Array {
  return ENCODER.encode(text);
}

export function sha256(data: Uint8Array): Uint8Array {
  return nobleSha256(data);
}

export function sha256Hex(data: Uint8Array | string): string {
  return toHex(sha256(typeof data === 'string' ? utf8(data) : data));
}

/** Compares without an early exit, so timing does not reveal where two secrets differ. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}
