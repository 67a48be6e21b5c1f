import { describe, expect, it } from 'vitest';
import { Argon2Hasher } from './argon2-hasher.js';

describe('Argon2Hasher', () => {
  const hasher = new Argon2Hasher();
  it('produces argon2id PHC strings with at least the OWASP parameters', async () => {
    const h = await hasher.hash('correct horse battery');
    expect(h).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await hasher.verify(h, 'correct horse battery')).toBe(true);
    expect(await hasher.verify(h, 'correct horse batterx')).toBe(false);
  });
  it('salts every hash', async () => {
    expect(await hasher.hash('same password here')).not.toBe(await hasher.hash('same password here'));
  });
  it('treats a malformed stored hash as a mismatch', async () => {
    expect(await hasher.verify('not-a-hash', 'whatever password')).toBe(false);
  });
  it('refuses parameters below the OWASP floor', () => {
    expect(() => new Argon2Hasher({ memoryCost: 4096, timeCost: 1, parallelism: 1 })).toThrow(RangeError);
  });
});
