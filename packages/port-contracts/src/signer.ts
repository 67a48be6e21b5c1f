import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import { fromHex, signCompactJws, toBase64url, type Ed25519Key, type Ed25519Signer } from '@strongroom/core';

interface Vector {
  name: string;
  secretKey: string;
  publicKey: string;
  message: string;
  signature: string;
}
const VECTORS = JSON.parse(
  readFileSync(new URL('../../core/test-vectors/ed25519-rfc8032.json', import.meta.url), 'utf8'),
) as { vectors: Vector[] };
const bytes = (h: string): Uint8Array => {
  const b = fromHex(h);
  if (b === null) throw new Error(`bad hex in vector ${h.slice(0, 16)}`);
  return b;
};
const keyOf = (v: Vector, kid = v.name): Ed25519Key => ({
  kid,
  seed: toBase64url(bytes(v.secretKey)),
  publicKey: toBase64url(bytes(v.publicKey)),
});

/**
 * The Ed25519Signer contract: RFC 8032's signatures byte for byte (Ed25519 is deterministic, so
 * any two signers must agree), a kid whose seed changed signs with the new seed, and a compact JWS
 * built on the signer verifies with jose. Run by core's WebCrypto signer and Node's.
 */
export function describeSignerContract(name: string, make: () => Ed25519Signer): void {
  describe(`Ed25519Signer contract: ${name}`, () => {
    it('has the vectors', () => expect(VECTORS.vectors.length).toBeGreaterThanOrEqual(3));
    for (const v of VECTORS.vectors) {
      it(`${v.name}: the RFC 8032 signature, exactly`, async () => {
        const signature = await make().sign(keyOf(v), bytes(v.message));
        expect(signature).toBeInstanceOf(Uint8Array);
        expect(Buffer.from(signature).toString('hex')).toBe(v.signature);
      });
    }

    it('a kid whose seed changed signs with the new seed, not a remembered key', async () => {
      const [a, b] = VECTORS.vectors as [Vector, Vector];
      const signer = make();
      const message = bytes(b.message);
      await signer.sign(keyOf(a, 'same-kid'), message);
      expect(Buffer.from(await signer.sign(keyOf(b, 'same-kid'), message)).toString('hex')).toBe(b.signature);
    });

    it('a compact JWS on this signer verifies with jose and carries the header and claims given', async () => {
      const v = VECTORS.vectors[0]!;
      const key = keyOf(v, 'kid-1');
      const token = await signCompactJws(
        { alg: 'EdDSA', typ: 'JWT', kid: 'kid-1' },
        { sub: 'acct', n: 1, s: 'ünïcode' },
        key,
        make(),
      );
      expect(token.split('.')).toHaveLength(3);
      expect(decodeProtectedHeader(token)).toEqual({ alg: 'EdDSA', typ: 'JWT', kid: 'kid-1' });
      const publicKey = await importJWK({ kty: 'OKP', crv: 'Ed25519', x: key.publicKey }, 'EdDSA');
      const { payload } = await jwtVerify(token, publicKey, { algorithms: ['EdDSA'] });
      expect(payload).toEqual({ sub: 'acct', n: 1, s: 'ünïcode' });
      // One character of the payload changed: the signature no longer holds.
      const [h, p, s] = token.split('.') as [string, string, string];
      const tampered = `${h}.${p.slice(0, -2)}${p.endsWith('A') ? 'B' : 'A'}${p.slice(-1)}.${s}`;
      await expect(jwtVerify(tampered, publicKey, { algorithms: ['EdDSA'] })).rejects.toThrow();
    });
  });
}
