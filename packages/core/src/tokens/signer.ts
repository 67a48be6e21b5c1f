import { importJWK, type CryptoKey } from 'jose';
import { toBase64url, utf8, utf8ToBase64url } from '../encoding/bytes.js';
import type { Ed25519Key, Ed25519Signer } from '../ports/signer.js';

/**
 * Ed25519 on WebCrypto: the signer core uses when the platform brings none. Imported keys are kept
 * per kid (a ring holds a handful), and a kid whose seed changed is imported again.
 */
export function webCryptoSigner(): Ed25519Signer {
  const imported = new Map<string, { seed: string; key: Promise<CryptoKey> }>();
  const keyOf = (k: Ed25519Key): Promise<CryptoKey> => {
    const hit = imported.get(k.kid);
    if (hit !== undefined && hit.seed === k.seed) return hit.key;
    const key = importJWK({ kty: 'OKP', crv: 'Ed25519', x: k.publicKey, d: k.seed }, 'EdDSA') as Promise<CryptoKey>;
    imported.set(k.kid, { seed: k.seed, key });
    return key;
  };
  return {
    async sign(k, message) {
      return new Uint8Array(await crypto.subtle.sign('Ed25519', await keyOf(k), message as Uint8Array<ArrayBuffer>));
    },
  };
}

/**
 * A compact JWS (RFC 7515) with an EdDSA signature: base64url header and payload, signed by
 * `signer`. Only the assembly is done here; the claims are the caller's, and tokens are checked
 * with jose's `jwtVerify` like any other.
 */
export async function signCompactJws(header: Record<string, unknown>, payload: Record<string, unknown>, key: Ed25519Key, signer: Ed25519Signer): Promise<string> {
  const input = `${utf8ToBase64url(JSON.stringify(header))}.${utf8ToBase64url(JSON.stringify(payload))}`;
  const signature = await signer.sign(key, utf8(input));
  return `${input}.${toBase64url(signature)}`;
}
