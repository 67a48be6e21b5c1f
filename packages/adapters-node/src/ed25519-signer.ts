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
        hit = { seed: k.seed, key: createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.publicKey, d: k.seed }, format: 'jwk' }) };
        imported.set(k.kid, hit);
      }
      return sign(null, message, hit.key);
    },
  };
}
