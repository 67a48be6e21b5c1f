import { importJWK, type CryptoKey } from 'jose';
import { base64urlInto, base64urlLength, toBase64url, utf8 } from '../encoding/bytes.js';
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

/** Encoded headers by their JSON: a ring has a handful of kids, so a minted token reuses one. */
const encodedHeaders = new Map<string, Uint8Array>();
const ASCII = new TextDecoder();

function encodedHeader(header: Record<string, unknown>): Uint8Array {
  const json = JSON.stringify(header);
  let encoded = encodedHeaders.get(json);
  if (encoded === undefined) {
    const raw = utf8(json);
    encoded = new Uint8Array(base64urlLength(raw.length));
    base64urlInto(raw, encoded, 0);
    // Bounded: whatever headers callers invent, this never holds more than a few dozen.
    if (encodedHeaders.size >= 32) encodedHeaders.clear();
    encodedHeaders.set(json, encoded);
  }
  return encoded;
}

/**
 * A compact JWS (RFC 7515) with an EdDSA signature: base64url header and payload, signed by
 * `signer`. Only the assembly is done here; the claims are the caller's, and tokens are checked
 * with jose's `jwtVerify` like any other. The signing input is written as ASCII bytes once and
 * signed as such; its string is decoded from those bytes, so the input is encoded once rather
 * than built as a string and encoded again for the signer (an access token is minted on every
 * refresh).
 */
export async function signCompactJws(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  key: Ed25519Key,
  signer: Ed25519Signer,
): Promise<string> {
  const head = encodedHeader(header);
  const claims = utf8(JSON.stringify(payload));
  const input = new Uint8Array(head.length + 1 + base64urlLength(claims.length));
  input.set(head);
  input[head.length] = 0x2e; // '.'
  base64urlInto(claims, input, head.length + 1);
  const signature = await signer.sign(key, input);
  return `${ASCII.decode(input)}.${toBase64url(signature)}`;
}
