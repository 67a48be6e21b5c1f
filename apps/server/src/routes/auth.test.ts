import { createLocalJWKSet, jwtVerify, decodeJwt } from 'jose';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PASSWORD, call, registerUser, testServer, type TestServer } from '@strongroom/tests';
import { inlined } from '../http/doc-check.js';

let s: TestServer;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

const DAY = 86_400_000;
const problem = (status: number, code: string) => ({
  status,
  body: expect.objectContaining({
    status,
    code,
    type: 'about:blank',
    title: expect.any(String),
    detail: expect.any(String),
  }),
});

describe('POST /v1/auth/register', () => {
  it('signs the new account in with a token pair', async () => {
    const r = await call(s.app, 'POST', '/v1/auth/register', {
      body: { address: '  Ada@Example.org ', password: PASSWORD },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      session_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      session_token: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 900,
      sign_in_ticket: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/),
    });
    const profile = await call(s.app, 'GET', '/v1/auth/profile', { token: r.body.access_token });
    expect(profile.body.address).toBe('Ada@Example.org');
  });
  it('SVC_REGISTRATION=closed: 403 error.auth.registration_closed, and nothing is created', async () => {
    const closed = await testServer({ SVC_REGISTRATION: 'closed' });
    try {
      expect(
        await call(closed.app, 'POST', '/v1/auth/register', {
          body: { address: 'ada@example.org', password: PASSWORD },
        }),
      ).toMatchObject(problem(403, 'error.auth.registration_closed'));
      expect(await closed.deps.stores.accounts.findAccountByAddress('ada@example.org')).toBeNull();
    } finally {
      await closed.close();
    }
  });
  it('SVC_REGISTRATION=allowlist: only listed addresses and @domains register; a change is seen at the next request', async () => {
    const listed = await testServer({ SVC_REGISTRATION: 'allowlist' });
    try {
      const register = (address: string) =>
        call(listed.app, 'POST', '/v1/auth/register', { body: { address, password: PASSWORD } });
      expect(await register('ada@example.org')).toMatchObject(problem(403, 'error.auth.registration_closed'));
      // Written straight to the store, as the CLI of another process would.
      await listed.deps.stores.registration.allowRegistration('@example.org', 0);
      expect((await register('Ada@EXAMPLE.org')).status).toBe(200);
      expect(await register('eve@example.org.evil')).toMatchObject(problem(403, 'error.auth.registration_closed'));
      await listed.deps.stores.registration.disallowRegistration('@example.org');
      expect(await register('bob@example.org')).toMatchObject(problem(403, 'error.auth.registration_closed'));
      expect(
        (await call(listed.app, 'POST', '/v1/auth/login', { body: { address: 'ada@example.org', password: PASSWORD } }))
          .status,
      ).toBe(200);
    } finally {
      await listed.close();
    }
  });
  it('refuses a taken address, case-insensitively: 409', async () => {
    await registerUser(s.app, 'bob@example.org');
    expect(
      await call(s.app, 'POST', '/v1/auth/register', { body: { address: 'BOB@example.org', password: PASSWORD } }),
    ).toMatchObject(problem(409, 'error.auth.user_already_exists'));
  });
  it('refuses a password under 12 characters (code points), with no composition rules', async () => {
    expect(
      await call(s.app, 'POST', '/v1/auth/register', { body: { address: 'c@example.org', password: '12345678901' } }),
    ).toMatchObject(problem(400, 'error.auth.weak_password'));
    // 12 code points of astral characters: 24 UTF-16 units but exactly the minimum.
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/register', {
          body: { address: 'c@example.org', password: '😀'.repeat(12) },
        })
      ).status,
    ).toBe(200);
    expect(
      await call(s.app, 'POST', '/v1/auth/register', { body: { address: 'd@example.org', password: '😀'.repeat(11) } }),
    ).toMatchObject(problem(400, 'error.auth.weak_password'));
  });
  it('takes exactly two inputs: unknown keys, bad types and bad addresses are 400 and create nothing', async () => {
    for (const body of [
      { address: 'e@example.org', password: PASSWORD, display_name: 'E' },
      { address: 'e@example.org' },
      { address: 5, password: PASSWORD },
      { address: 'not-an-address', password: PASSWORD },
      { address: `${'a'.repeat(250)}@example.org`, password: PASSWORD },
    ]) {
      expect(await call(s.app, 'POST', '/v1/auth/register', { body })).toMatchObject(
        problem(400, 'error.request.invalid'),
      );
    }
    expect(
      (await call(s.app, 'POST', '/v1/auth/register', { body: { address: 'e@example.org', password: PASSWORD } }))
        .status,
    ).toBe(200);
  });
  it('refuses malformed JSON, the wrong media type and oversized bodies', async () => {
    expect(
      await call(s.app, 'POST', '/v1/auth/register', { raw: '{"address":', contentType: 'application/json' }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(
      await call(s.app, 'POST', '/v1/auth/register', {
        raw: 'address=x',
        contentType: 'application/x-www-form-urlencoded',
      }),
    ).toMatchObject(problem(415, 'error.request.unsupported_media_type'));
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/register', {
          raw: JSON.stringify({ address: 'f@example.org', password: PASSWORD }),
          contentType: 'application/json; charset=utf-8',
        })
      ).status,
    ).toBe(200);
    const huge = JSON.stringify({ address: 'g@example.org', password: 'x'.repeat(70 * 1024) });
    expect(
      await call(s.app, 'POST', '/v1/auth/register', { raw: huge, contentType: 'application/json' }),
    ).toMatchObject(problem(413, 'error.request.too_large'));
  });
});

describe('POST /v1/auth/login', () => {
  it('opens a new session with a token pair and records a well-formed cohort', async () => {
    const u = await registerUser(s.app);
    const cohort = 'ab'.repeat(32);
    const r = await call(s.app, 'POST', '/v1/auth/login', {
      body: { address: u.address.toUpperCase(), password: PASSWORD, cohort_hash: cohort, device_id: 'laptop' },
    });
    expect(r.status).toBe(200);
    expect(r.body.session_id).not.toBe(u.session_id);
    const list = await call(s.app, 'GET', '/v1/auth/sessions', { token: r.body.access_token });
    expect(list.body.sessions.find((x: { current: boolean }) => x.current).cohort_hash).toBe(cohort);
    expect(list.body.cohorts.map((c: { cohort_hash: string }) => c.cohort_hash)).toEqual([cohort]);
  });
  it('treats a malformed cohort exactly as absent', async () => {
    const u = await registerUser(s.app);
    for (const cohort_hash of ['AB'.repeat(32), 'zz', 42, { x: 1 }, null]) {
      const r = await call(s.app, 'POST', '/v1/auth/login', {
        body: { address: u.address, password: PASSWORD, cohort_hash },
      });
      expect(r.status).toBe(200);
    }
    const list = await call(s.app, 'GET', '/v1/auth/sessions', { token: u.access_token });
    expect(list.body.cohorts).toEqual([]);
    expect(list.body.sessions.every((x: { cohort_hash: unknown }) => x.cohort_hash === null)).toBe(true);
  });
  it('answers a wrong password and an unknown address with the same 401 body', async () => {
    const u = await registerUser(s.app);
    const wrong = await call(s.app, 'POST', '/v1/auth/login', {
      body: { address: u.address, password: 'not the password!' },
    });
    const unknown = await call(s.app, 'POST', '/v1/auth/login', {
      body: { address: 'nobody@example.org', password: 'not the password!' },
    });
    expect(wrong).toMatchObject(problem(401, 'error.auth.invalid_credentials'));
    expect(unknown.body).toEqual(wrong.body);
  });
  it('refuses a locked account with 403 once the password checks out', async () => {
    const u = await registerUser(s.app);
    const account = await s.deps.stores.accounts.findAccountByAddress(u.address);
    await s.deps.stores.accounts.setLocked(account!.id, s.clock.now());
    expect(
      await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } }),
    ).toMatchObject(problem(403, 'error.auth.account_locked'));
    expect(
      await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: 'wrong password!!' } }),
    ).toMatchObject(problem(401, 'error.auth.invalid_credentials'));
  });
});

describe('access tokens and refresh', () => {
  it('issues EdDSA JWTs with exactly the fixed claims, verifiable with the published JWKS', async () => {
    const u = await registerUser(s.app);
    const info = await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null });
    const { payload, protectedHeader } = await jwtVerify(u.access_token, createLocalJWKSet(info.body.signing_keys), {
      currentDate: new Date(s.clock.now()),
    });
    expect(protectedHeader).toMatchObject({ alg: 'EdDSA', kid: expect.any(String) });
    expect(Object.keys(payload).sort()).toEqual(['exp', 'iat', 'iss', 'jti', 'sid', 'sub']);
    expect(payload).toMatchObject({ iss: info.body.api_base_url, sid: u.session_id });
    expect(payload.exp! - payload.iat!).toBe(900);
  });
  it('refreshes with the session token; unknown tokens are 401 session_invalid', async () => {
    const u = await registerUser(s.app);
    s.clock.advance(60_000);
    const r = await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 900 });
    expect(decodeJwt(r.body.access_token).sid).toBe(u.session_id);
    expect(
      await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: 'AAAAAAAAAAAAAAAAAAAAAA' } }),
    ).toMatchObject(problem(401, 'error.auth.session_invalid'));
    expect(await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: 'not base64!' } })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
  });
  it('refuses requests without, or with a forged, access token', async () => {
    const u = await registerUser(s.app);
    expect(await call(s.app, 'GET', '/v1/auth/profile')).toMatchObject(problem(401, 'error.auth.session_invalid'));
    const [h, p] = u.access_token.split('.');
    expect(await call(s.app, 'GET', '/v1/auth/profile', { token: `${h}.${p}.${'A'.repeat(86)}` })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
    expect(await call(s.app, 'GET', '/v1/auth/profile', { token: u.session_token })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
  });
  it('an expired access token is refused; a refreshed one works', async () => {
    const u = await registerUser(s.app);
    s.clock.advance(15 * 60_000);
    expect(await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
    const r = await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } });
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: r.body.access_token })).status).toBe(200);
  });
  it('a rotated key keeps verifying old tokens for the grace window and both keys are published', async () => {
    const u = await registerUser(s.app);
    await s.deps.keyRing.rotate();
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).status).toBe(200);
    const info = await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null });
    expect(info.body.signing_keys.keys).toHaveLength(2);
    const fresh = await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } });
    const kid = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[0] ?? '', 'base64url').toString()).kid as string;
    expect(kid(fresh.body.access_token)).not.toBe(kid(u.access_token));
  });
});

describe('an unreadable session ledger fails closed', () => {
  it('authenticated requests get 401 error.auth.unavailable; refresh gets 503; nothing changes', async () => {
    const u = await registerUser(s.app);
    s.breakStore();
    expect(await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).toMatchObject(
      problem(401, 'error.auth.unavailable'),
    );
    expect(await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } })).toMatchObject(
      problem(503, 'error.auth.unavailable'),
    );
    expect(
      (await call(s.app, 'POST', '/v1/auth/register', { body: { address: 'later@example.org', password: PASSWORD } }))
        .status,
    ).toBe(503);
    s.mendStore();
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).status).toBe(200);
    expect(await s.deps.stores.accounts.findAccountByAddress('later@example.org')).toBeNull();
  });
});

describe('sessions: list and revoke', () => {
  it('writes last_used_at at most once a minute, refreshes included', async () => {
    const u = await registerUser(s.app);
    const lastUsed = async (token: string) =>
      (await call(s.app, 'GET', '/v1/auth/sessions', { token })).body.sessions.find(
        (x: { current: boolean }) => x.current,
      ).last_used_at as string;
    const first = await lastUsed(u.access_token);
    let token = u.access_token;
    for (let i = 0; i < 3; i++) {
      s.clock.advance(2_000);
      const r = await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } });
      expect(r.status).toBe(200);
      token = r.body.access_token;
      expect(await lastUsed(token)).toBe(first);
    }
    s.clock.advance(60_000);
    expect((await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } })).status).toBe(
      200,
    );
    expect(await lastUsed(token)).toBe(new Date(s.clock.now()).toISOString());
  });
  it('lists live sessions with the fixed fields and marks the current one', async () => {
    const u = await registerUser(s.app);
    await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } });
    const r = await call(s.app, 'GET', '/v1/auth/sessions', { token: u.access_token });
    expect(r.status).toBe(200);
    expect(r.body.sessions).toHaveLength(2);
    expect(Object.keys(r.body.sessions[0]).sort()).toEqual([
      'cohort_hash',
      'created_at',
      'current',
      'expires_at',
      'last_used_at',
      'method',
      'session_id',
    ]);
    expect(
      r.body.sessions.filter((x: { current: boolean }) => x.current).map((x: { session_id: string }) => x.session_id),
    ).toEqual([u.session_id]);
    expect(r.body.sessions[0].expires_at).toBe(new Date(s.clock.now() + 180 * 86_400_000).toISOString());
  });
  it('revocation bites on the very next request and refresh', async () => {
    const u = await registerUser(s.app);
    const other = await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } });
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).status).toBe(200);
    expect(
      (await call(s.app, 'DELETE', `/v1/auth/sessions/${u.session_id}`, { token: other.body.access_token })).status,
    ).toBe(204);
    expect(await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
    expect(await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: other.body.access_token })).status).toBe(200);
  });
  it("another account's session, an already closed one and a malformed id are 404", async () => {
    const a = await registerUser(s.app);
    const b = await registerUser(s.app);
    expect(await call(s.app, 'DELETE', `/v1/auth/sessions/${b.session_id}`, { token: a.access_token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: b.access_token })).status).toBe(200);
    expect(await call(s.app, 'DELETE', '/v1/auth/sessions/not-a-uuid', { token: a.access_token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    const second = await call(s.app, 'POST', '/v1/auth/login', { body: { address: a.address, password: PASSWORD } });
    await call(s.app, 'DELETE', `/v1/auth/sessions/${second.body.session_id}`, { token: a.access_token });
    expect(
      await call(s.app, 'DELETE', `/v1/auth/sessions/${second.body.session_id}`, { token: a.access_token }),
    ).toMatchObject(problem(404, 'error.not_found'));
  });
  it('a client below Min may still sign in and sign out', async () => {
    const u = await registerUser(s.app);
    const old = '2026-01-01';
    const login = await call(s.app, 'POST', '/v1/auth/login', {
      version: old,
      body: { address: u.address, password: PASSWORD },
    });
    expect(login.status).toBe(200);
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/refresh', {
          version: old,
          body: { session_token: login.body.session_token },
        })
      ).status,
    ).toBe(200);
    expect(
      (await call(s.app, 'GET', '/v1/auth/profile', { version: old, token: login.body.access_token })).status,
    ).toBe(200);
    expect(
      (
        await call(s.app, 'DELETE', `/v1/auth/sessions/${login.body.session_id}`, {
          version: old,
          token: login.body.access_token,
        })
      ).status,
    ).toBe(204);
  });
});

describe('POST /v1/auth/reauthenticate', () => {
  it('confirms the password, 403 when wrong', async () => {
    const u = await registerUser(s.app);
    const ok = await call(s.app, 'POST', '/v1/auth/reauthenticate', {
      token: u.access_token,
      body: { password: PASSWORD },
    });
    expect(ok).toMatchObject({ status: 200, body: { reauthenticated_at: new Date(s.clock.now()).toISOString() } });
    expect(
      await call(s.app, 'POST', '/v1/auth/reauthenticate', {
        token: u.access_token,
        body: { password: 'wrong password!!' },
      }),
    ).toMatchObject(problem(403, 'error.auth.invalid_credentials'));
    expect(
      await call(s.app, 'POST', '/v1/auth/reauthenticate', {
        token: u.access_token,
        body: { password: PASSWORD, code: '123456' },
      }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
  });
});

describe('POST /v1/auth/password', () => {
  it('closes every session and re-opens the caller under its own id with fresh tokens', async () => {
    const u = await registerUser(s.app);
    const other = await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } });
    s.clock.advance(1000);
    const r = await call(s.app, 'POST', '/v1/auth/password', {
      token: u.access_token,
      body: { current_password: PASSWORD, new_password: 'an entirely new passphrase' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ session_id: u.session_id, token_type: 'Bearer', expires_in: 900 });
    expect(r.body.session_token).not.toBe(u.session_token);
    expect(await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
    expect(await call(s.app, 'GET', '/v1/auth/profile', { token: other.body.access_token })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
    expect(await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: r.body.access_token })).status).toBe(200);
    expect(
      (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: r.body.session_token } })).status,
    ).toBe(200);
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/login', {
          body: { address: u.address, password: 'an entirely new passphrase' },
        })
      ).status,
    ).toBe(200);
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } })).status,
    ).toBe(401);
  });
  it('of concurrent changes from one session, one is acknowledged, and its tokens and password are the ones that work', async () => {
    const u = await registerUser(s.app);
    const answers = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        call(s.app, 'POST', '/v1/auth/password', {
          token: u.access_token,
          body: { current_password: PASSWORD, new_password: `new passphrase number ${i}` },
        }),
      ),
    );
    const won = answers.map((r, i) => ({ r, i: i + 1 })).filter(({ r }) => r.status === 200);
    expect(won).toHaveLength(1);
    for (const { status } of answers.filter((r) => r.status !== 200)) expect(status).toBe(401);
    const winner = won[0]!;
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: winner.r.body.access_token })).status).toBe(200);
    expect(
      (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: winner.r.body.session_token } })).status,
    ).toBe(200);
    for (let i = 1; i <= 4; i++) {
      const login = await call(s.app, 'POST', '/v1/auth/login', {
        body: { address: u.address, password: `new passphrase number ${i}` },
      });
      expect(login.status, `password ${i}`).toBe(i === winner.i ? 200 : 401);
    }
  });
  it('a wrong current password is 403 (never 401) and changes nothing', async () => {
    const u = await registerUser(s.app);
    expect(
      await call(s.app, 'POST', '/v1/auth/password', {
        token: u.access_token,
        body: { current_password: 'wrong password!!', new_password: 'an entirely new passphrase' },
      }),
    ).toMatchObject(problem(403, 'error.auth.invalid_credentials'));
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).status).toBe(200);
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } })).status,
    ).toBe(200);
  });
  it('its answer is an access-token issuance: it restarts the idle clock, leaves the hard expiry alone', async () => {
    const u = await registerUser(s.app);
    s.clock.advance(10 * 60_000);
    const r = await call(s.app, 'POST', '/v1/auth/password', {
      token: u.access_token,
      body: { current_password: PASSWORD, new_password: 'an entirely new passphrase' },
    });
    expect(r.status).toBe(200);
    const changedAt = s.clock.now();
    const listed = await call(s.app, 'GET', '/v1/auth/sessions', { token: r.body.access_token });
    expect(listed.body.sessions[0]).toMatchObject({
      current: true,
      expires_at: new Date(changedAt + 180 * DAY).toISOString(),
    });
    // 180 days after registration but not after the change's issuance: still open.
    s.clock.advance(180 * DAY - 5 * 60_000);
    expect(
      (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: r.body.session_token } })).status,
    ).toBe(200);
  });
  it('mints nothing for a session past its hard expiry: 401 session_invalid, and nothing changes', async () => {
    const u = await registerUser(s.app);
    const other = await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } });
    for (let day = 100; day <= 300; day += 100) {
      s.clock.advance(100 * DAY);
      expect((await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } })).status).toBe(
        200,
      );
      expect(
        (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: other.body.session_token } })).status,
      ).toBe(200);
    }
    s.clock.advance(65 * DAY - 60_000);
    const last = await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } });
    expect(last.status).toBe(200);
    s.clock.advance(2 * 60_000); // the session is 365 days old; its access token still has 13 minutes
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: last.body.access_token })).status).toBe(200);
    const r = await call(s.app, 'POST', '/v1/auth/password', {
      token: last.body.access_token,
      body: { current_password: PASSWORD, new_password: 'an entirely new passphrase' },
    });
    expect(r).toMatchObject(problem(401, 'error.auth.session_invalid'));
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } })).status,
    ).toBe(200);
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/login', {
          body: { address: u.address, password: 'an entirely new passphrase' },
        })
      ).status,
    ).toBe(401);
  });
  it('a weak new password is 400; a locked account is 403 account_locked', async () => {
    const u = await registerUser(s.app);
    expect(
      await call(s.app, 'POST', '/v1/auth/password', {
        token: u.access_token,
        body: { current_password: PASSWORD, new_password: 'short' },
      }),
    ).toMatchObject(problem(400, 'error.auth.weak_password'));
    const account = await s.deps.stores.accounts.findAccountByAddress(u.address);
    await s.deps.stores.accounts.setLocked(account!.id, 1);
    expect(
      await call(s.app, 'POST', '/v1/auth/password', {
        token: u.access_token,
        body: { current_password: PASSWORD, new_password: 'an entirely new passphrase' },
      }),
    ).toMatchObject(problem(403, 'error.auth.account_locked'));
  });
});

describe('profile', () => {
  it('returns the fixed fields; PATCH sets, leaves, and clears the display name', async () => {
    const u = await registerUser(s.app);
    const get = await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token });
    expect(Object.keys(get.body).sort()).toEqual(['account_id', 'address', 'created_at', 'display_name', 'handle']);
    const set = await call(s.app, 'PATCH', '/v1/auth/profile', {
      token: u.access_token,
      body: { display_name: '  Ada Lovelace  ' },
    });
    expect(set).toMatchObject({ status: 200, body: { display_name: 'Ada Lovelace' } });
    expect(
      (await call(s.app, 'PATCH', '/v1/auth/profile', { token: u.access_token, body: {} })).body.display_name,
    ).toBe('Ada Lovelace');
    expect(
      (await call(s.app, 'PATCH', '/v1/auth/profile', { token: u.access_token, body: { display_name: '   ' } })).body
        .display_name,
    ).toBeNull();
    await call(s.app, 'PATCH', '/v1/auth/profile', { token: u.access_token, body: { display_name: 'x' } });
    expect(
      (await call(s.app, 'PATCH', '/v1/auth/profile', { token: u.access_token, body: { display_name: null } })).body
        .display_name,
    ).toBeNull();
  });
  it('refuses control characters and more than 128 code points, never rewriting, and changes nothing', async () => {
    const u = await registerUser(s.app);
    await call(s.app, 'PATCH', '/v1/auth/profile', { token: u.access_token, body: { display_name: 'Kept' } });
    for (const display_name of ['a\u0007b', 'tab\tinside', 'c1\u0085', 'x'.repeat(129), '😀'.repeat(129)]) {
      expect(
        await call(s.app, 'PATCH', '/v1/auth/profile', { token: u.access_token, body: { display_name } }),
      ).toMatchObject(problem(400, 'error.profile.invalid_display_name'));
    }
    expect(
      (
        await call(s.app, 'PATCH', '/v1/auth/profile', {
          token: u.access_token,
          body: { display_name: '😀'.repeat(128) },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await call(s.app, 'PATCH', '/v1/auth/profile', {
          token: u.access_token,
          body: { display_name: ` ${'y'.repeat(128)}\n` },
        })
      ).body.display_name,
    ).toBe('y'.repeat(128));
    expect(
      await call(s.app, 'PATCH', '/v1/auth/profile', { token: u.access_token, body: { address: 'new@example.org' } }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(
      await call(s.app, 'PATCH', '/v1/auth/profile', { token: u.access_token, body: { display_name: 12 } }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).body.address).toBe(u.address);
  });
});

describe('protocol negotiation', () => {
  it('advertises the window on every response, errors and public records included', async () => {
    const u = await registerUser(s.app);
    const responses = [
      await call(s.app, 'GET', '/nope'),
      await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null }),
      await call(s.app, 'GET', '/v1/auth/profile'),
      await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token }),
      await call(s.app, 'DELETE', '/v1/auth/profile', { token: u.access_token }),
      await call(s.app, 'GET', '/openapi.json', { version: null }),
      await call(s.app, 'DELETE', `/v1/auth/sessions/${u.session_id}`, { token: u.access_token }),
    ];
    expect(responses.map((r) => r.status)).toEqual([404, 200, 401, 200, 405, 200, 204]);
    for (const r of responses) {
      expect(r.headers.get('x-svc-protocol-min')).toBe('2026-03-01');
      expect(r.headers.get('x-svc-protocol-max')).toBe('2026-11-01');
      expect(r.headers.get('x-svc-min-client-build')).toBe('1');
    }
  });
  it('missing, malformed or too-new versions are 426 unsupported with the range', async () => {
    for (const version of [null, 'yesterday', '2026-02-30', '2026-13-01', '2026-11-02', '2026-1-01']) {
      const r = await call(s.app, 'POST', '/v1/auth/register', {
        version,
        body: { address: 'v@example.org', password: PASSWORD },
      });
      expect(r).toMatchObject(problem(426, 'error.protocol.unsupported'));
      expect(r.body).toMatchObject({ supported_min: '2026-03-01', supported_max: '2026-11-01' });
    }
    expect(await s.deps.stores.accounts.findAccountByAddress('v@example.org')).toBeNull();
  });
  it('below Min: reads proceed, writes are 426 below_min', async () => {
    const u = await registerUser(s.app);
    expect(
      (await call(s.app, 'GET', '/v1/auth/profile', { version: '2026-02-28', token: u.access_token })).status,
    ).toBe(200);
    expect(
      await call(s.app, 'PATCH', '/v1/auth/profile', {
        version: '2026-02-28',
        token: u.access_token,
        body: { display_name: 'x' },
      }),
    ).toMatchObject(problem(426, 'error.protocol.below_min'));
    expect(
      await call(s.app, 'POST', '/v1/auth/register', {
        version: '2026-02-28',
        body: { address: 'w@example.org', password: PASSWORD },
      }),
    ).toMatchObject(problem(426, 'error.protocol.below_min'));
    expect(
      (
        await call(s.app, 'PATCH', '/v1/auth/profile', {
          version: '2026-03-01',
          token: u.access_token,
          body: { display_name: 'x' },
        })
      ).status,
    ).toBe(200);
  });
});

describe('routing and public records', () => {
  it('unknown paths and operations that do not exist are 404 problem+json; wrong methods 405', async () => {
    for (const path of ['/v1/auth/validate', '/v1/auth/password/reset', '/v1/auth/passkeys', '/nope']) {
      const r = await call(s.app, 'POST', path, { body: {} });
      expect(r).toMatchObject(problem(404, 'error.not_found'));
      expect(r.headers.get('content-type')).toBe('application/problem+json');
    }
    const r = await call(s.app, 'DELETE', '/v1/auth/profile');
    expect(r).toMatchObject(problem(405, 'error.request.method_not_allowed'));
    expect(r.headers.get('allow')).toBe('GET, HEAD, PATCH'); // HEAD is served for every GET
    // Paths with parameters too, and a trailing slash names nothing.
    const put = await call(s.app, 'PUT', '/v1/auth/sessions/0190b000-0000-7000-8000-000000000001');
    expect(put).toMatchObject(problem(405, 'error.request.method_not_allowed'));
    expect(put.headers.get('allow')).toBe('DELETE');
    expect(put.headers.get('x-svc-protocol-max')).toBe('2026-11-01');
    expect(await call(s.app, 'GET', '/v1/auth/profile/')).toMatchObject(problem(404, 'error.not_found'));
  });
  it('takes the bearer scheme in any case, and nothing but a bearer token', async () => {
    const u = await registerUser(s.app);
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      expect(
        (await call(s.app, 'GET', '/v1/auth/profile', { headers: { authorization: `${scheme} ${u.access_token}` } }))
          .status,
      ).toBe(200);
    }
    for (const authorization of [
      u.access_token,
      `Basic ${u.access_token}`,
      'Bearer ',
      `Bearer  ${u.access_token}`,
      `Bearer ${u.access_token} x`,
      `Bearer ${u.access_token}x`,
    ]) {
      expect(await call(s.app, 'GET', '/v1/auth/profile', { headers: { authorization } })).toMatchObject(
        problem(401, 'error.auth.session_invalid'),
      );
    }
  });
  it('serves the public records without a protocol header', async () => {
    for (const path of [
      '/.well-known/svc/server-info',
      '/.well-known/svc/revoked-jti',
      '/.well-known/svc/deprecation',
      '/.well-known/svc/attestation-keys',
    ]) {
      expect((await call(s.app, 'GET', path, { version: null })).status).toBe(200);
    }
    const info = await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null });
    expect(info.body).toMatchObject({
      api_base_url: 'http://127.0.0.1:8080',
      auth: { local: true },
      protocol_version: { min: '2026-03-01', max: '2026-11-01' },
    });
    expect(JSON.stringify(info.body)).not.toMatch(/@example\.org/);
    expect(await call(s.app, 'GET', '/.well-known/svc/moved/ada', { version: null })).toMatchObject(
      problem(404, 'error.not_found'),
    );
  });
  it('WebFinger: 400 without a well-formed resource, 404 for an account without a public record', async () => {
    const u = await registerUser(s.app);
    expect(await call(s.app, 'GET', '/.well-known/webfinger', { version: null })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(await call(s.app, 'GET', '/.well-known/webfinger?resource=nonsense', { version: null })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    const none = await call(s.app, 'GET', '/.well-known/webfinger?resource=acct:nobody@127.0.0.1', { version: null });
    const exists = await call(
      s.app,
      'GET',
      `/.well-known/webfinger?resource=acct:${u.address.split('@')[0]}@127.0.0.1`,
      { version: null },
    );
    expect(none).toMatchObject(problem(404, 'error.not_found'));
    expect(exists.body).toEqual(none.body);
  });
  it('publishes an OpenAPI 3.1 document generated from the routes', async () => {
    const r = await call(s.app, 'GET', '/openapi.json', { version: null });
    expect(r.body.openapi).toBe('3.1.0');
    expect(Object.keys(r.body.paths)).toEqual(
      expect.arrayContaining(['/v1/auth/register', '/v1/auth/sessions/{session_id}', '/.well-known/svc/server-info']),
    );
    const register = r.body.paths['/v1/auth/register'].post.requestBody.content['application/json'].schema;
    expect(register).toEqual({ $ref: '#/components/schemas/RegisterRequest' });
    expect(inlined(r.body, register)).toMatchObject({
      required: ['address', 'password'],
      additionalProperties: false,
    });
  });
});

describe('logging', () => {
  it('writes one line per request and never a token or password', async () => {
    const u = await registerUser(s.app);
    await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } });
    await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token });
    const text = JSON.stringify(s.logger.lines);
    expect(s.logger.lines.filter((l) => l.event === 'http.request')).toHaveLength(3);
    for (const secret of [u.session_token, u.access_token, PASSWORD]) expect(text).not.toContain(secret);
  });
});

describe('body limits without a declared length', () => {
  it('stops reading a chunked body at 64 KiB and refuses it', async () => {
    let pulled = 0;
    const chunk = new TextEncoder().encode('x'.repeat(16 * 1024));
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        if (pulled > 1000) controller.close();
        else controller.enqueue(chunk);
      },
    });
    const res = await s.request('/v1/auth/register', {
      method: 'POST',
      headers: { 'x-svc-protocol': '2026-11-01', 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect((await res.json()).code).toBe('error.request.too_large');
    // Over a real socket the client buffers ahead of the server; what matters is that the server
    // closes the connection instead of draining the rest. The body stream is never told (its
    // cancel does not fire), so the condition is the server's side: once it holds no connection,
    // nothing more of the body can go, and the 16 MB were never sent whole. A server that drained
    // would keep the socket (keep-alive) and this wait would time out.
    await vi.waitUntil(async () => (await s.connections()) === 0, { timeout: 5_000, interval: 5 });
    expect(pulled).toBeLessThan(1000);
  });
});
