import { readFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import { describe, expect, it } from 'vitest';
import { fromHex } from '../encoding/bytes.js';
import { isAcceptableEd25519Key, isAcceptableMlDsa65Key, verifyEd25519, verifyMlDsa65 } from './signatures.js';

const VECTORS = new URL('../../test-vectors/', import.meta.url);
const load = <T>(name: string): T => JSON.parse(readFileSync(new URL(name, VECTORS), 'utf8')) as T;
const hex = (h: string): Uint8Array => {
  const b = fromHex(h);
  if (b === null) throw new Error(`bad hex in vector: ${h.slice(0, 16)}`);
  return b;
};

describe('verifyEd25519: RFC 8032 section 7.1', () => {
  const file = load<{
    vectors: { name: string; secretKey: string; publicKey: string; message: string; signature: string }[];
  }>('ed25519-rfc8032.json');
  it('has the vectors', () => expect(file.vectors.length).toBeGreaterThanOrEqual(4));
  for (const v of file.vectors) {
    it(`${v.name}: verifies, and fails with one bit flipped`, () => {
      const pk = hex(v.publicKey);
      const msg = hex(v.message);
      const sig = hex(v.signature);
      expect(ed25519.getPublicKey(hex(v.secretKey))).toEqual(pk);
      expect(verifyEd25519(pk, msg, sig)).toBe(true);
      const bad = sig.slice();
      bad[5]! ^= 1;
      expect(verifyEd25519(pk, msg, bad)).toBe(false);
      expect(verifyEd25519(pk, new Uint8Array([...msg, 0]), sig)).toBe(false);
      expect(isAcceptableEd25519Key(pk)).toBe(true);
    });
  }
});

describe('verifyEd25519: Wycheproof ed25519_test.json', () => {
  interface Test {
    tcId: number;
    msg: string;
    sig: string;
    result: 'valid' | 'invalid';
  }
  const file = load<{ numberOfTests: number; testGroups: { publicKey: { pk: string }; tests: Test[] }[] }>(
    'wycheproof-ed25519.json',
  );
  const all = file.testGroups.flatMap((g) => g.tests.map((t) => ({ pk: g.publicKey.pk, ...t })));
  it('runs all of them', () => expect(all.length).toBe(file.numberOfTests));
  it.each(all.map((t) => [t.tcId, t] as const))('tcId %i', (_id, t) => {
    expect(verifyEd25519(hex(t.pk), hex(t.msg), hex(t.sig))).toBe(t.result === 'valid');
  });
});

describe('Ed25519 edge cases (speccheck): strict verification and key policy', () => {
  interface Case {
    index: number;
    message: string;
    pub_key: string;
    signature: string;
    pub_key_small_order: boolean | 'decode-error';
    observed: { noble_curves_2_4_zip215_false: boolean };
  }
  const file = load<{ cases: Case[] }>('ed25519-speccheck.json');
  it.each(file.cases.map((c) => [c.index, c] as const))('case %i', (_i, c) => {
    expect(verifyEd25519(hex(c.pub_key), hex(c.message), hex(c.signature))).toBe(
      c.observed.noble_curves_2_4_zip215_false,
    );
    // Small-order and non-canonical keys are refused at publication, whatever a verifier would say.
    expect(isAcceptableEd25519Key(hex(c.pub_key))).toBe(c.pub_key_small_order === false);
  });
  it('refuses keys of the wrong length and the identity point', () => {
    expect(isAcceptableEd25519Key(new Uint8Array(31))).toBe(false);
    const identity = new Uint8Array(32);
    identity[0] = 1;
    expect(isAcceptableEd25519Key(identity)).toBe(false);
  });
});

describe('verifyMlDsa65: Wycheproof mldsa_65_verify_test.json subset', () => {
  interface Test {
    tcId: number;
    msg: string;
    sig: string;
    ctx?: string;
    result: 'valid' | 'invalid';
  }
  const file = load<{ testGroups: { publicKey: string; tests: Test[] }[] }>('mldsa65-sigver.json');
  const all = file.testGroups.flatMap((g) => g.tests.map((t) => ({ pk: g.publicKey, ...t })));
  it('has the 22 cases', () => expect(all.length).toBe(22));
  it.each(all.map((t) => [t.tcId, t] as const))('tcId %i', (_id, t) => {
    // The project fixes an empty context, so a vector valid only under a non-empty one must fail here.
    const emptyContext = t.ctx === undefined || t.ctx === '';
    expect(verifyMlDsa65(hex(t.pk), hex(t.msg), hex(t.sig))).toBe(t.result === 'valid' && emptyContext);
    // Every vector's key came from key generation (or is cut short): only the length refuses any.
    expect(isAcceptableMlDsa65Key(hex(t.pk))).toBe(hex(t.pk).length === 1952);
  });
  it('a key that cannot be real is refused: all zero, all 0xff, or ρ or t1 one byte repeated; a generated key is accepted', () => {
    const real = ml_dsa65.keygen(new Uint8Array(32).fill(7)).publicKey;
    expect(isAcceptableMlDsa65Key(real)).toBe(true);
    expect(isAcceptableMlDsa65Key(new Uint8Array(1952))).toBe(false);
    expect(isAcceptableMlDsa65Key(new Uint8Array(1952).fill(0xff))).toBe(false);
    const zeroRho = real.slice();
    zeroRho.fill(0, 0, 32);
    expect(isAcceptableMlDsa65Key(zeroRho)).toBe(false);
    const zeroT1 = real.slice();
    zeroT1.fill(0, 32);
    expect(isAcceptableMlDsa65Key(zeroT1)).toBe(false);
    expect(isAcceptableMlDsa65Key(real.subarray(0, 1951))).toBe(false);
  });
  it('a freshly signed message verifies, and not under another key', () => {
    const a = ml_dsa65.keygen(new Uint8Array(32).fill(1));
    const b = ml_dsa65.keygen(new Uint8Array(32).fill(2));
    const msg = new TextEncoder().encode('hello');
    const sig = ml_dsa65.sign(msg, a.secretKey);
    expect(verifyMlDsa65(a.publicKey, msg, sig)).toBe(true);
    expect(verifyMlDsa65(b.publicKey, msg, sig)).toBe(false);
  });
});
