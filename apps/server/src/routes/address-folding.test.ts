import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PASSWORD, call, testServer, type TestServer } from '@strongroom/tests';

/**
 * Addresses are compared after Unicode NFC normalization and full case
 * folding, and an address holding control or default-ignorable code points is 400
 * error.request.invalid (spec §3.2).
 */

let s: TestServer;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

const register = (address: string) =>
  call(s.app, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
const login = (address: string) => call(s.app, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } });

describe('address comparison', () => {
  it('composed and decomposed forms are one account', async () => {
    expect((await register('jos\u00e9@example.org')).status).toBe(200);
    expect(await register('jose\u0301@example.org')).toMatchObject({
      status: 409,
      body: { code: 'error.auth.user_already_exists' },
    });
    expect((await login('JOSE\u0301@EXAMPLE.ORG')).status).toBe(200);
  });

  it('full case folding, not only lower-casing: ß and SS, ﬁ and FI, final sigma', async () => {
    expect((await register('stra\u00dfe@example.org')).status).toBe(200);
    expect((await register('STRASSE@example.org')).status).toBe(409);
    expect((await login('strasse@example.org')).status).toBe(200);
    // Capital sharp s folds with ß and "ss" too (its lower case is ß, whose upper case is SS).
    expect((await register('STRA\u1e9eE@example.org')).status).toBe(409);
    expect((await register('stra\u1e9ee@example.org')).status).toBe(409);
    expect((await login('stra\u1e9ee@example.org')).status).toBe(200);
    expect((await register('\u1e9e\u1e9e@example.org')).status).toBe(200);
    expect((await register('ssss@example.org')).status).toBe(409);
    expect((await register('\ufb01le@example.org')).status).toBe(200);
    expect((await register('FILE@example.org')).status).toBe(409);
    expect((await register('\u03bf\u03b4\u03bf\u03c2@example.org')).status).toBe(200);
    expect((await register('\u039f\u0394\u039f\u03a3@example.org')).status).toBe(409);
  });

  it('control and default-ignorable code points are refused: 400, on register and login, nothing created', async () => {
    expect((await register('mallory@example.org')).status).toBe(200);
    for (const sneaky of [
      'mall\u200bory@example.org',
      'mall\u00adory@example.org',
      '\ufeffmallory@example.org',
      'mallory\ufe0f@example.org',
      'mall\u2060ory@example.org',
      'mall\u202eory@example.org',
      'mallory@exa\u0007mple.org',
    ]) {
      expect(await register(sneaky)).toMatchObject({ status: 400, body: { code: 'error.request.invalid' } });
      expect(await login(sneaky)).toMatchObject({ status: 400, body: { code: 'error.request.invalid' } });
    }
    expect((s.db.prepare('SELECT count(*) AS n FROM accounts').get() as { n: number }).n).toBe(1);
  });

  it('an account stored before the change (its key only lower-cased) is still found by the spelling it registered with, and is not duplicated', async () => {
    // As a database written before this change holds it: address as typed, key = toLowerCase().
    expect((await register('legacy@example.org')).status).toBe(200);
    const decomposed = 'Rene\u0301@example.org';
    s.db
      .prepare("UPDATE accounts SET address = ?, address_key = ? WHERE address_key = 'legacy@example.org'")
      .run(decomposed, decomposed.toLowerCase());
    expect((await login(decomposed)).status).toBe(200);
    expect((await login('rene\u0301@EXAMPLE.org')).status).toBe(200);
    expect((await register(decomposed)).status).toBe(409);
  });
});
