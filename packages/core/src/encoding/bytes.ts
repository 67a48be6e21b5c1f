import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';

/** Joins byte chunks into one array (a streamed body, once its size is known to be within limits). */
export { concatBytes } from '@noble/hashes/utils.js';

const B64URL = /^[A-Za-z0-9_-]*$/;
const ENCODER = new TextEncoder();

const B64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Two base64url characters for each 12-bit value: half the lookups of one table per character. */
const B64URL_PAIRS: string[] = Array.from({ length: 4096 }, (_, i) => B64URL_ALPHABET[i >> 6]! + B64URL_ALPHABET[i & 63]!);

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

/** The UTF-8 of `text` as unpadded base64url (a JWS's header and claims). */
export function utf8ToBase64url(text: string): string {
  return toBase64url(ENCODER.encode(text));
}

/** Strict: refuses padding, foreign characters and impossible lengths (returns null). */
export function fromBase64url(text: string): Uint8Array | null {
  if (!B64URL.test(text) || text.length % 4 === 1) return null;
  const padded = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  let binary: string;
  try {
    binary = atob(padded);
  } catch {
    return null;
  }
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  // Reject non-canonical trailing bits so one value has exactly one spelling.
  return toBase64url(out) === text ? out : null;
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
