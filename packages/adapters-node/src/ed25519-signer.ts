import { createRequire } from 'node:module';
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import type { Ed25519Key, Ed25519Signer } from '@strongroom/core';

/**
 * Ed25519 with node:crypto's synchronous `sign`. WebCrypto's `subtle.sign` queues each signature on
 * libuv's thread pool and wakes the event loop when it is done; on a loaded server that hand-off
 * cost more than twice the signature itself. A signature is a few tens of microseconds of CPU, so
 * running it on the event loop holds nothing up for long. Keys are imported once per kid.
 */
export function nodeEd25519Signer(): Ed25519Signer {
  const imported = new Map<string, { seed: string; key: KeyObject }>();
  return {
    sign(k: Ed25519Key, message: Uint8Array): Uint8Array {
      let hit = imported.get(k.kid);
      if (hit === undefined || hit.seed !== k.seed) {
        hit = {
          seed: k.seed,
          key: createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.publicKey, d: k.seed }, format: 'jwk' }),
        };
        imported.set(k.kid, hit);
      }
      return sign(null, message, hit.key);
    },
  };
}

/** The part of sodium-native this signer calls. */
interface Sodium {
  crypto_sign_seed_keypair(publicKey: Buffer, secretKey: Buffer, seed: Buffer): void;
  crypto_sign_detached(signature: Buffer, message: Uint8Array, secretKey: Buffer): void;
}

/**
 * Ed25519 with libsodium (sodium-native), synchronous like `nodeEd25519Signer` and about twice as
 * fast: node:crypto goes through OpenSSL 3's EVP layer, which sets up a signing context and looks
 * up SHA-512 on every call, and that setup cost as much as the signature. The secret key is derived
 * from the seed once per kid, and a seed that does not give the ring's public key is refused
 * rather than used to sign tokens nobody could verify.
 */
export function sodiumEd25519Signer(sodium: Sodium): Ed25519Signer {
  const derived = new Map<string, { seed: string; secretKey: Buffer }>();
  return {
    sign(k: Ed25519Key, message: Uint8Array): Uint8Array {
      let hit = derived.get(k.kid);
      if (hit === undefined || hit.seed !== k.seed) {
        const seed = Buffer.from(k.seed, 'base64url');
        if (seed.length !== 32) throw new Error(`Ed25519 key ${k.kid}: the seed is not 32 bytes`);
        const publicKey = Buffer.alloc(32);
        const secretKey = Buffer.alloc(64);
        sodium.crypto_sign_seed_keypair(publicKey, secretKey, seed);
        if (publicKey.toString('base64url') !== k.publicKey)
          throw new Error(`Ed25519 key ${k.kid}: the public key does not match the seed`);
        hit = { seed: k.seed, secretKey };
        derived.set(k.kid, hit);
      }
      const signature = Buffer.alloc(64);
      sodium.crypto_sign_detached(signature, message, hit.secretKey);
      return signature;
    },
  };
}

/**
 * The fastest signer this machine can run: libsodium when sodium-native has a build for the
 * platform, node:crypto otherwise (both give the same bytes; only the cost differs).
 */
export function platformEd25519Signer(): Ed25519Signer {
  try {
    return sodiumEd25519Signer(createRequire(import.meta.url)('sodium-native') as Sodium);
  } catch {
    return nodeEd25519Signer();
  }
}
