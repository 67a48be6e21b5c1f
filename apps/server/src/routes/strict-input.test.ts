import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSWORD, call, registerUser, testServer, type TestServer } from '@strongroom/tests';

/** Strict input through the real app: every refusal happens in the body reader, before any handler. */
let s: TestServer;
beforeAll(async () => {
  s = await testServer();
});
afterAll(async () => {
  await s.close();
});

const problem = (status: number, code: string) => ({ status, body: expect.objectContaining({ status, code }) });
const raw = (text: string) => ({ raw: text, contentType: 'application/json' });

describe('strict JSON at the HTTP edge', () => {
  it('a POST that needs a JSON body and sends none is 400 (spec §2.2), a body of another type 415', async () => {
    expect(await call(s.app, 'POST', '/v1/auth/register')).toMatchObject(problem(400, 'error.request.invalid'));
    expect(await call(s.app, 'POST', '/v1/auth/login', { headers: { 'content-length': '0' } })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(
      await call(s.app, 'POST', '/v1/auth/register', { raw: 'address=x', contentType: 'text/plain' }),
    ).toMatchObject(problem(415, 'error.request.unsupported_media_type'));
    expect(await call(s.app, 'POST', '/v1/auth/register', { raw: '{}' })).toMatchObject(
      problem(415, 'error.request.unsupported_media_type'),
    );
  });

  it('a duplicated member is 400 and creates nothing, whichever copy would have won', async () => {
    const dup = `{"address":"dup@example.org","password":"${PASSWORD}","address":"other@example.org"}`;
    expect(await call(s.app, 'POST', '/v1/auth/register', raw(dup))).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: 'other@example.org', password: PASSWORD } }))
        .status,
    ).toBe(401);
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: 'dup@example.org', password: PASSWORD } }))
        .status,
    ).toBe(401);
  });

  it('a top level that is not an object is 400, on every JSON route (PATCH /v1/auth/profile with [] among them)', async () => {
    const { access_token } = await registerUser(s.app);
    for (const body of ['[]', '[{"display_name":"x"}]', '"x"', '1', 'null', 'true']) {
      expect(await call(s.app, 'PATCH', '/v1/auth/profile', { ...raw(body), token: access_token })).toMatchObject(
        problem(400, 'error.request.invalid'),
      );
      expect(
        await call(s.app, 'POST', '/v1/auth/logout/all/challenge', { ...raw(body), token: access_token }),
      ).toMatchObject(problem(400, 'error.request.invalid'));
    }
    expect((await call(s.app, 'PATCH', '/v1/auth/profile', { ...raw('{}'), token: access_token })).status).toBe(200);
  });

  it('lone surrogates are refused, so \\ud800, \\udfff and \\ufffd can never be one password', async () => {
    const base = 'twelve chars at least ';
    for (const esc of ['\\ud800', '\\udfff', '\\udc00\\ud800']) {
      const r = await call(
        s.app,
        'POST',
        '/v1/auth/register',
        raw(`{"address":"sur@example.org","password":"${base}${esc}"}`),
      );
      expect(r).toMatchObject(problem(400, 'error.request.invalid'));
    }
    // A raw (UTF-8 encoded) surrogate is not UTF-8 at all.
    const bytes = new Uint8Array([
      ...new TextEncoder().encode(`{"address":"sur@example.org","password":"${base}`),
      0xed,
      0xa0,
      0x80,
      ...new TextEncoder().encode('"}'),
    ]);
    expect(
      await call(s.app, 'POST', '/v1/auth/register', { raw: bytes, contentType: 'application/json' }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(
      (await call(s.app, 'POST', '/v1/auth/register', raw(`{"address":"sur@example.org","password":"${base}\\ufffd"}`)))
        .status,
    ).toBe(200);
    // The replacement character is itself, not a stand-in for a refused surrogate.
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', raw(`{"address":"sur@example.org","password":"${base}\\ud800"}`)))
        .status,
    ).toBe(400);
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', raw(`{"address":"sur@example.org","password":"${base}\\ufffd"}`)))
        .status,
    ).toBe(200);
  });

  it('passwords: over 1,024 code points is weak at registration and password change, and wrong (unhashed) at sign-in', async () => {
    expect(
      await call(s.app, 'POST', '/v1/auth/register', {
        body: { address: 'long@example.org', password: 'x'.repeat(1025) },
      }),
    ).toMatchObject(problem(400, 'error.auth.weak_password'));
    const pair = await call(s.app, 'POST', '/v1/auth/register', {
      body: { address: 'long@example.org', password: 'x'.repeat(1024) },
    });
    expect(pair.status).toBe(200);
    const token = pair.body.access_token as string;
    expect(
      await call(s.app, 'POST', '/v1/auth/password', {
        token,
        body: { current_password: 'x'.repeat(1024), new_password: '😀'.repeat(1025) },
      }),
    ).toMatchObject(problem(400, 'error.auth.weak_password'));
    const started = performance.now();
    expect(
      await call(s.app, 'POST', '/v1/auth/login', {
        body: { address: 'long@example.org', password: 'x'.repeat(60_000) },
      }),
    ).toMatchObject(problem(401, 'error.auth.invalid_credentials'));
    expect(
      await call(s.app, 'POST', '/v1/auth/reauthenticate', { token, body: { password: 'x'.repeat(1025) } }),
    ).toMatchObject(problem(403, 'error.auth.invalid_credentials'));
    // argon2 takes tens of milliseconds; neither refusal above ran it.
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('property: a body with a duplicated member at any depth is refused before any handler', async () => {
    const { access_token } = await registerUser(s.app);
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: 5 }), fc.string({ maxLength: 4 }), async (depth, name) => {
        let nested = `{${JSON.stringify(name)}:1,${JSON.stringify(name)}:2}`;
        for (let d = 0; d < depth; d++) nested = `{"n":[${nested}]}`;
        const body = depth === 0 ? `{"display_name":"a","display_name":"b"}` : `{"display_name":"a","x":${nested}}`;
        const r = await call(s.app, 'PATCH', '/v1/auth/profile', { ...raw(body), token: access_token });
        expect(r).toMatchObject(problem(400, 'error.request.invalid'));
      }),
      { numRuns: 40 },
    );
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: access_token })).body.display_name).toBeNull();
  });
});
