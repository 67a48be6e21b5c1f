import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { describeSignerContract } from '@strongroom/port-contracts';
import { nodeEd25519Signer } from './ed25519-signer.js';

describeSignerContract('node:crypto (adapters-node)', nodeEd25519Signer);

describe('nodeEd25519Signer', () => {
  it('answers with the signature itself, not a promise: no thread-pool round trip', () => {
    const seed = new Uint8Array(32).fill(7);
    const key = { kid: 'k', seed: Buffer.from(seed).toString('base64url'), publicKey: Buffer.from(ed25519.getPublicKey(seed)).toString('base64url') };
    const message = new Uint8Array([1, 2, 3]);
    const out = nodeEd25519Signer().sign(key, message);
    expect(out).toBeInstanceOf(Uint8Array);
    expect(ed25519.verify(out as Uint8Array, message, ed25519.getPublicKey(seed))).toBe(true);
  });
});
