import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { judgeDeployment, secretKeyFingerprint } from './stamp.js';

const key = (b: number) => new Uint8Array(32).fill(b);

describe('deployment record', () => {
  it('the key fingerprint is a keyed hash: stable per key, different across keys, never the key', () => {
    expect(secretKeyFingerprint(key(7))).toMatch(/^[0-9a-f]{64}$/);
    expect(secretKeyFingerprint(key(7))).toBe(secretKeyFingerprint(key(7)));
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        (a, b) => {
          const fa = secretKeyFingerprint(a);
          expect(fa === secretKeyFingerprint(b)).toBe(Buffer.from(a).equals(Buffer.from(b)));
          expect(fa).not.toContain(Buffer.from(a).toString('hex'));
        },
      ),
    );
    // Not a plain hash of the key: the label is under the key, not beside it.
    expect(secretKeyFingerprint(key(7))).not.toBe(Buffer.from(key(7)).toString('hex'));
  });

  it('a different key is always refused; a configured issuer binds, a derived one gives way', () => {
    const fp = secretKeyFingerprint(key(1));
    const rec = (issuer: string, issuerConfigured: boolean) => ({
      keyFingerprint: fp,
      issuer,
      issuerConfigured,
      recordedAt: 0,
    });
    const me = (issuer: string, issuerConfigured: boolean, k = fp) => ({ keyFingerprint: k, issuer, issuerConfigured });
    const A = 'https://a.example';
    const B = 'https://b.example';
    expect(judgeDeployment(rec(A, true), me(A, true, secretKeyFingerprint(key(2))))).toBe('secret_key');
    expect(judgeDeployment(rec(A, false), me(A, false, secretKeyFingerprint(key(2))))).toBe('secret_key');
    expect(judgeDeployment(rec(A, true), me(A, true))).toBe('ok');
    expect(judgeDeployment(rec(A, true), me(A, false))).toBe('ok');
    expect(judgeDeployment(rec(A, true), me(B, true))).toBe('issuer');
    expect(judgeDeployment(rec(A, true), me(B, false))).toBe('issuer');
    expect(judgeDeployment(rec(A, false), me(A, false))).toBe('ok');
    expect(judgeDeployment(rec(A, false), me(B, false))).toBe('adopt_issuer');
    expect(judgeDeployment(rec(A, false), me(B, true))).toBe('adopt_issuer');
    expect(judgeDeployment(rec(A, false), me(A, true))).toBe('adopt_issuer');
  });
});
