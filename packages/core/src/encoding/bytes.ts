import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';

/** Joins byte chunks into one array (a streamed body, once its size is known to be within limits). */
export { concatBytes } from '@noble/hashes/utils.js';

const B64URL = /^[A-Za-z0-9_-]*$/;

/** Unpadded base64url, the wire form of byte strings in JSON. */
export function toBase64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
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

export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

export function fromHex(text: string): Uint8Array | null {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(text)) return null;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return out;
}

export function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
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
