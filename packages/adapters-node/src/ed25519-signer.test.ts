import { createRequire } from 'node:module';
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { describeSignerContract } from '@strongroom/port-contracts';
import { nodeEd25519Signer, platformEd25519Signer, sodiumEd25519Signer } from './ed25519-signer.js';

const sodium = createRequire(import.meta.url)('sodium-native');

describeSignerContract('node:crypto (adapters-node)', nodeEd25519Signer);
describeSignerContract('libsodium (adapters-node)', () => sodiumEd25519Signer(sodium));

const seed = new Uint8Array(32).fill(7);
const key = {
  kid: 'k',
  seed: Buffer.from(seed).toString('base64url'),
  publicKey: Buffer.from(ed25519.getPublicKey(seed)).toString('base64url'),
};
const message = new Uint8Array([1, 2, 3]);

describe.each([
  ['nodeEd25519Signer', nodeEd25519Signer],
  ['sodiumEd25519Signer', () => sodiumEd25519Signer(sodium)],
])('%s', (_, make) => {
  it('answers with the signature itself, not a promise: no thread-pool round trip', () => {
    const out = make().sign(key, message);
    expect(out).toBeInstanceOf(Uint8Array);
    expect(ed25519.verify(out as Uint8Array, message, ed25519.getPublicKey(seed))).toBe(true);
  });
});

describe('sodiumEd25519Signer', () => {
  it('refuses a key whose public key does not belong to its seed', () => {
    const other = Buffer.from(ed25519.getPublicKey(new Uint8Array(32).fill(8))).toString('base64url');
    expect(() => sodiumEd25519Signer(sodium).sign({ ...key, publicKey: other }, message)).toThrow(/does not match/);
  });
  it('refuses a seed of the wrong length', () => {
    expect(() =>
      sodiumEd25519Signer(sodium).sign({ ...key, seed: Buffer.alloc(31).toString('base64url') }, message),
    ).toThrow(/32 bytes/);
  });
});

describe('platformEd25519Signer', () => {
  it('is libsodium on this machine, and signs as the others do', () => {
    const out = platformEd25519Signer().sign(key, message) as Uint8Array;
    expect(Buffer.from(out).equals(Buffer.from(nodeEd25519Signer().sign(key, message) as Uint8Array))).toBe(true);
    // Only the libsodium signer checks the public key against the seed: this tells which one it is.
    const other = Buffer.from(ed25519.getPublicKey(new Uint8Array(32).fill(8))).toString('base64url');
    expect(() => platformEd25519Signer().sign({ ...key, kid: 'k2', publicKey: other }, message)).toThrow(
      /does not match/,
    );
  });
});
