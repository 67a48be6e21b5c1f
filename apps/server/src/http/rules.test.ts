import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, PASSWORD, registerUser, testServer, type TestServer } from '@strongroom/tests';

// The account rules as the request schemas carry them: the code a body refused by a rule answers
// with, and the edges the document states (code points, not UTF-16 units).

let s: TestServer;
beforeAll(async () => {
  s = await testServer();
});
afterAll(() => s.close());

const register = (address: string, password: string) =>
  call(s.app, 'POST', '/v1/auth/register', { body: { address, password } });
let n = 0;
const fresh = () => `rules${++n}-${Math.random().toString(36).slice(2, 8)}@example.org`;

describe('request rules from core', () => {
  it('a password of 11 or 1,025 code points is weak; 12 and 1,024 (astral ones included) are taken', async () => {
    expect(await register(fresh(), 'x'.repeat(11))).toMatchObject({
      status: 400,
      body: { code: 'error.auth.weak_password' },
    });
    expect(await register(fresh(), '😀'.repeat(1025))).toMatchObject({
      status: 400,
      body: { code: 'error.auth.weak_password' },
    });
    expect((await register(fresh(), '😀'.repeat(12))).status).toBe(200);
    expect((await register(fresh(), '😀'.repeat(1024))).status).toBe(200);
  });

  it('an address is trimmed, then has the e-mail shape and at most 254 code points', async () => {
    expect((await register(`  ${fresh()}  `, PASSWORD)).status).toBe(200);
    const local = '😀'.repeat(254 - '@example.org'.length);
    expect((await register(`${local}@example.org`, PASSWORD)).status).toBe(200);
    expect(await register(`x${local}@example.org`, PASSWORD)).toMatchObject({
      status: 400,
      body: { code: 'error.request.invalid' },
    });
    expect(await register('no-at-sign.example.org', PASSWORD)).toMatchObject({
      status: 400,
      body: { code: 'error.request.invalid' },
    });
  });

  it('a body broken in two ways by different rules is error.request.invalid', async () => {
    expect(await register('not an address', 'short')).toMatchObject({
      status: 400,
      body: { code: 'error.request.invalid' },
    });
    expect(
      await call(s.app, 'POST', '/v1/auth/register', { body: { address: fresh(), password: 'short', extra: 1 } }),
    ).toMatchObject({ status: 400, body: { code: 'error.request.invalid' } });
  });

  it('a display name is trimmed, then refused for a control character or more than 128 code points', async () => {
    const u = await registerUser(s.app);
    const patch = (display_name: unknown) =>
      call(s.app, 'PATCH', '/v1/auth/profile', { token: u.access_token, body: { display_name } });
    expect(await patch(` ${'😀'.repeat(128)}\t`)).toMatchObject({
      status: 200,
      body: { display_name: '😀'.repeat(128) },
    });
    expect(await patch('😀'.repeat(129))).toMatchObject({
      status: 400,
      body: { code: 'error.profile.invalid_display_name' },
    });
    expect(await patch('a\u0085b')).toMatchObject({
      status: 400,
      body: { code: 'error.profile.invalid_display_name' },
    });
    expect(await patch('   ')).toMatchObject({ status: 200, body: { display_name: null } });
    expect(await patch(7)).toMatchObject({ status: 400, body: { code: 'error.request.invalid' } });
  });
});
