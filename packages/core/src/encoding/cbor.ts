import { decode, encode, rfc8949EncodeOptions } from 'cborg';
import { constantTimeEqual } from './bytes.js';

/** RFC 8949 section 4.2.1 core deterministic encoding. */
export function canonicalCbor(value: unknown): Uint8Array {
  return encode(value, rfc8949EncodeOptions);
}

/**
 * Decodes CBOR and accepts it only if re-encoding reproduces the input byte for byte.
 * Decoders accept non-canonical input (unsorted keys, long heads, float64 1.0), so signatures and
 * hashes would otherwise cover bytes other than the ones the server stores. Null when the input is
 * malformed or not canonical.
 */
export function decodeCanonicalCbor(bytes: Uint8Array): unknown {
  let value: unknown;
  try {
    value = decode(bytes, { strict: true, useMaps: false, rejectDuplicateMapKeys: true });
  } catch {
    return null;
  }
  let again: Uint8Array;
  try {
    again = canonicalCbor(value);
  } catch {
    return null;
  }
  return constantTimeEqual(again, bytes) ? value : null;
}
