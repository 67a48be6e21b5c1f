import { ed25519 } from '@noble/curves/ed25519.js';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';

export const ED25519_PUBLIC_KEY_LENGTH = 32;
export const ED25519_SIGNATURE_LENGTH = 64;
export const MLDSA65_PUBLIC_KEY_LENGTH = 1952;
export const MLDSA65_SIGNATURE_LENGTH = 3309;

/**
 * Strict Ed25519 verification (RFC 8032 cofactorless, `zip215: false`): S < L, canonical R and A.
 * Every malformed input is `false`, never a throw, so a caller cannot tell a parse error from a
 * wrong signature.
 */
export function verifyEd25519(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== ED25519_PUBLIC_KEY_LENGTH || signature.length !== ED25519_SIGNATURE_LENGTH) return false;
  try {
    return ed25519.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}

/**
 * May this Ed25519 key be published in a device directory or fixed as an identity anchor? It must
 * decode canonically and not be of small order: such keys admit signatures that verify for many
 * messages, so a directory must never carry one (speccheck cases 0, 1, 10, 11).
 */
export function isAcceptableEd25519Key(publicKey: Uint8Array): boolean {
  if (publicKey.length !== ED25519_PUBLIC_KEY_LENGTH) return false;
  try {
    const point = ed25519.Point.fromBytes(publicKey, false);
    return !point.isSmallOrder();
  } catch {
    return false;
  }
}

/** Pure ML-DSA-65 (FIPS 204) with an empty context. Some malformed inputs make noble throw: false. */
export function verifyMlDsa65(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== MLDSA65_PUBLIC_KEY_LENGTH || signature.length !== MLDSA65_SIGNATURE_LENGTH) return false;
  try {
    return ml_dsa65.verify(signature, message, publicKey);
  } catch {
    return false;
  }
}

/** The seed ρ that opens an ML-DSA public key (FIPS 204, pkEncode); t1 follows it. */
const MLDSA_RHO_LENGTH = 32;

/** Every byte of `bytes` is the same value (all zero, all 0xff, …). */
const isOneByteRepeated = (bytes: Uint8Array): boolean => bytes.every((b) => b === bytes[0]);

/**
 * ML-DSA-65 public keys are the raw 1,952-byte encoding, and one that cannot be real is refused too.
 * Any 1,952 bytes decode, so length alone admits an all-zero key: a placeholder that verifies
 * nothing yet sits in a directory as if it were a device's key. A real key's ρ is the output of
 * SHAKE256 and its t1 is 1,920 bytes of packed 10-bit coefficients of a pseudorandom vector: either
 * being one byte repeated happens with probability about 2^-256 at most, so a key whose ρ or t1 is
 * one byte repeated was not made by key generation.
 */
export function isAcceptableMlDsa65Key(publicKey: Uint8Array): boolean {
  if (publicKey.length !== MLDSA65_PUBLIC_KEY_LENGTH) return false;
  return (
    !isOneByteRepeated(publicKey.subarray(0, MLDSA_RHO_LENGTH)) &&
    !isOneByteRepeated(publicKey.subarray(MLDSA_RHO_LENGTH))
  );
}
