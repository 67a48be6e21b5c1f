import { createServer } from 'node:net';
import { sha256, toBase64url, utf8 } from '@strongroom/core';
import { OidcRelyingParty } from '@strongroom/adapters-node';
import { MemoryLogger } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, PASSWORD, type TestServer } from '@strongroom/tests';
import { allRoutes } from '../app.js';
import { Browser, startTestProvider, type TestPerson, type TestProvider } from '@strongroom/tests/oidc';

const BASE = 'http://127.0.0.1:8080';
const CALLBACK = `${BASE}/v1/auth/oidc/callback`;
const RETURN = 'https://app.example/done';
const APP_RETURN = 'com.example.photos:/oauth';
/** Every flow carries the app's PKCE challenge (spec §6.4); helpers send this pair unless told otherwise. */
const APP_VERIFIER = 'oidc-http-test-app-verifier'.padEnd(43, 'q');
const APP_CHALLENGE = toBase64url(sha256(utf8(APP_VERIFIER)));

let idp: TestProvider;
let publicIdp: TestProvider;
const open: TestServer[] = [];

beforeAll(async () => {
  idp = await startTestProvider({ redirectUris: [CALLBACK] });
  publicIdp = await startTestProvider({ redirectUris: [CALLBACK], clientSecret: null });
}, 30_000);
afterAll(async () => {
  for (const s of open) await s.close();
  await idp?.close();
  await publicIdp?.close();
});

function oidcEnv(provider: TestProvider = idp): Record<string, string> {
  return {
    SVC_OIDC_ISSUER: provider.issuer,
    SVC_OIDC_CLIENT_ID: provider.clientId,
    ...(provider.clientSecret === null ? {} : { SVC_OIDC_CLIENT_SECRET: provider.clientSecret }),
    SVC_OIDC_RETURN_URIS: `${RETURN}, ${APP_RETURN}`,
  };
}

/** A test server with OIDC on, its clock at real time (the provider's tokens carry real times). */
async function server(
  env: Record<string, string> = {},
  provider: TestProvider = idp,
  platform: Parameters<typeof testServer>[1] = {},
): Promise<TestServer> {
  const s = await testServer({ ...oidcEnv(provider), ...env }, platform);
  s.clock.set(Date.now());
  open.push(s);
  return s;
}

/** A server whose relying party sees the provider's token responses with the ID token rewritten. */
async function tamperedServer(edit: (claims: Record<string, unknown>) => Record<string, unknown>): Promise<TestServer> {
  const rp = new OidcRelyingParty({
    issuer: idp.issuer,
    clientId: idp.clientId,
    clientSecret: idp.clientSecret,
    redirectUri: CALLBACK,
    scopes: 'openid email profile',
    logger: new MemoryLogger(),
    fetch: idp.tamperingFetch(edit),
  });
  return server({}, idp, { identityProvider: rp });
}

let people = 0;
function person(over: Partial<TestPerson> = {}): TestPerson {
  people++;
  return {
    sub: `sub-${people}-${Math.random().toString(36).slice(2, 8)}`,
    email: `p${people}-${Math.random().toString(36).slice(2, 8)}@example.org`,
    emailVerified: true,
    name: `Person ${people}`,
    ...over,
  };
}

async function start(s: TestServer, body: Record<string, unknown>, token?: string) {
  return call(s.app, 'POST', '/v1/auth/oidc/start', {
    body: { app_challenge: APP_CHALLENGE, ...body },
    ...(token ? { token } : {}),
  });
}

/** The browser's trip through the provider: returns the URL the provider sends it back to (our callback). */
async function atProvider(
  authorizationUrl: string,
  who: TestPerson | 'deny',
  browser = new Browser(),
  provider: TestProvider = idp,
): Promise<URL> {
  if (who === 'deny') provider.willDeny();
  else provider.willSignIn(who);
  return browser.follow(authorizationUrl, CALLBACK);
}

/** Delivers the provider's redirect to our callback; returns where we send the browser. */
async function deliver(s: TestServer, callbackUrl: URL) {
  const r = await call(s.app, 'GET', callbackUrl.pathname + callbackUrl.search, { version: null });
  const location = r.headers.get('location');
  return { ...r, location: location === null ? null : new URL(location) };
}

async function complete(s: TestServer, body: Record<string, unknown>, token?: string) {
  return call(s.app, 'POST', '/v1/auth/oidc/complete', {
    body: { app_verifier: APP_VERIFIER, ...body },
    ...(token ? { token } : {}),
  });
}

/** A whole flow up to the login code; fails the test on any other outcome. */
async function loginCode(
  s: TestServer,
  who: TestPerson,
  body: Record<string, unknown> = {},
  token?: string,
  provider: TestProvider = idp,
): Promise<string> {
  const started = await start(s, { return_to: RETURN, ...body }, token);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const back = await deliver(s, await atProvider(started.body.authorization_url, who, new Browser(), provider));
  expect(back.status).toBe(302);
  const code = back.location?.searchParams.get('login_code');
  expect(code, back.location?.toString()).toBeTruthy();
  return code!;
}

async function signIn(s: TestServer, who: TestPerson, provider: TestProvider = idp) {
  const code = await loginCode(s, who, {}, undefined, provider);
  const done = await complete(s, { login_code: code });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  return done.body as { session_id: string; session_token: string; access_token: string };
}

/** The error a flow ends with on its way back to the client. */
async function flowError(
  s: TestServer,
  who: TestPerson | 'deny',
  body: Record<string, unknown> = {},
  token?: string,
): Promise<string | null> {
  const started = await start(s, { return_to: RETURN, ...body }, token);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const back = await deliver(s, await atProvider(started.body.authorization_url, who));
  expect(back.status).toBe(302);
  expect(back.location?.origin + back.location!.pathname).toBe(RETURN);
  expect(back.location?.searchParams.get('login_code')).toBeNull();
  return back.location!.searchParams.get('error');
}

describe('OIDC sign-in against a real provider (oidc-provider)', { timeout: 30_000 }, () => {
  it('publishes the provider in server-info and keeps local sign-in on', async () => {
    const s = await server();
    const info = await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null });
    expect(info.body.auth).toEqual({
      local: true,
      oidc: { issuer: idp.issuer, start_endpoint: `${BASE}/v1/auth/oidc/start` },
    });
    const plain = await testServer();
    open.push(plain);
    expect((await call(plain.app, 'GET', '/.well-known/svc/server-info', { version: null })).body.auth).toEqual({
      local: true,
      oidc: null,
    });
    expect((await start(plain, { return_to: RETURN })).status).toBe(404);
  });

  it('a first sign-in that would create an account follows SVC_REGISTRATION: 302 back with error.auth.registration_closed', async () => {
    const closed = await server({ SVC_REGISTRATION: 'closed' });
    expect(await flowError(closed, person())).toBe('error.auth.registration_closed');
    const listed = await server({ SVC_REGISTRATION: 'allowlist' });
    const p = person();
    expect(await flowError(listed, p)).toBe('error.auth.registration_closed');
    expect((await listed.deps.registration.allow(p.email!)).ok).toBe(true);
    const first = await signIn(listed, p);
    expect((await listed.deps.registration.disallow(p.email!)).ok).toBe(true);
    // Its account exists now: signing in again creates nothing, so the rule does not apply.
    const again = await signIn(listed, p);
    const profile = await call(listed.app, 'GET', '/v1/auth/profile', { token: again.access_token });
    const firstProfile = await call(listed.app, 'GET', '/v1/auth/profile', { token: first.access_token });
    expect(profile.body.account_id).toBe(firstProfile.body.account_id);
  });

  it('first sign-in creates the account from the verified email and name; the session says oidc', async () => {
    const s = await server();
    const p = person({ name: '  Ada Lovelace ' });
    const started = await start(s, { return_to: RETURN });
    expect(started.body.expires_in).toBe(600);
    const auth = new URL(started.body.authorization_url);
    expect(auth.origin).toBe(idp.issuer);
    expect(auth.searchParams.get('code_challenge_method')).toBe('S256');
    expect(auth.searchParams.get('redirect_uri')).toBe(CALLBACK);
    expect(auth.searchParams.get('scope')).toBe('openid email profile');
    expect(auth.searchParams.get('nonce')).toBeTruthy();
    const back = await deliver(s, await atProvider(started.body.authorization_url, p));
    expect(back.status).toBe(302);
    expect(back.headers.get('cache-control')).toBe('no-store');
    const code = back.location!.searchParams.get('login_code')!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cohort = 'a'.repeat(64);
    const pair = await complete(s, { login_code: code, cohort_hash: cohort });
    expect(pair.status).toBe(200);
    expect(Object.keys(pair.body).sort()).toEqual([
      'access_token',
      'expires_in',
      'session_id',
      'session_token',
      'sign_in_ticket',
      'token_type',
    ]);
    const profile = await call(s.app, 'GET', '/v1/auth/profile', { token: pair.body.access_token });
    expect(profile.body).toMatchObject({ address: p.email, display_name: 'Ada Lovelace' });
    const sessions = await call(s.app, 'GET', '/v1/auth/sessions', { token: pair.body.access_token });
    expect(sessions.body.sessions).toEqual([
      expect.objectContaining({ session_id: pair.body.session_id, method: 'oidc', cohort_hash: cohort, current: true }),
    ]);
    expect(sessions.body.cohorts.map((c: { cohort_hash: string }) => c.cohort_hash)).toEqual([cohort]);
    // The session token refreshes like any other.
    expect(
      (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: pair.body.session_token } })).status,
    ).toBe(200);
    // No secret of the flow reaches the logs.
    const logged = JSON.stringify(s.logger.lines);
    expect(s.logger.lines.some((l) => l.event === 'oidc.callback_accepted')).toBe(true);
    for (const secret of [
      code,
      auth.searchParams.get('state')!,
      auth.searchParams.get('nonce')!,
      pair.body.session_token,
      idp.clientSecret!,
    ]) {
      expect(logged).not.toContain(secret);
    }
  });

  it('a second sign-in of the same person lands on the same account', async () => {
    const s = await server();
    const p = person();
    const first = await signIn(s, p);
    const second = await signIn(s, { ...p, name: 'Renamed Later' });
    const a = await call(s.app, 'GET', '/v1/auth/profile', { token: first.access_token });
    const b = await call(s.app, 'GET', '/v1/auth/profile', { token: second.access_token });
    expect(b.body.account_id).toBe(a.body.account_id);
    expect(b.body.display_name).toBe(a.body.display_name);
    expect(second.session_id).not.toBe(first.session_id);
  });

  it('is not held by the password throttle: with the address held for wrong passwords, the provider still signs its person in, with a ticket', async () => {
    const s = await server();
    const p = person();
    const first = await signIn(s, p);
    for (let i = 0; i < 11; i++)
      await call(s.app, 'POST', '/v1/auth/login', { body: { address: p.email, password: `wrong guess ${i} here` } });
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: p.email, password: 'wrong guess again' } }))
        .status,
    ).toBe(429);
    const again = (await signIn(s, p)) as unknown as { access_token: string; sign_in_ticket: string };
    expect(again.sign_in_ticket).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: again.access_token })).body.account_id).toBe(
      (await call(s.app, 'GET', '/v1/auth/profile', { token: first.access_token })).body.account_id,
    );
  });

  it('works as a public client too (PKCE only, no secret)', async () => {
    const s = await server({}, publicIdp);
    const pair = await signIn(s, person(), publicIdp);
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: pair.access_token })).status).toBe(200);
  });

  it('an unverified or absent email gives an account without an address', async () => {
    const s = await server();
    const unverified = await signIn(s, person({ emailVerified: false }));
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: unverified.access_token })).body.address).toBeNull();
    const none = await signIn(s, person({ email: undefined }));
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: none.access_token })).body.address).toBeNull();
  });

  it('never links silently to the account holding a verified email', async () => {
    const s = await server();
    const local = await registerUser(s.app);
    const p = person({ email: local.address.toUpperCase() });
    expect(await flowError(s, p)).toBe('error.auth.user_already_exists');
    // Nothing was created or bound: the same person is refused again, and the local account is untouched.
    expect(await flowError(s, p)).toBe('error.auth.user_already_exists');
    const sessions = await call(s.app, 'GET', '/v1/auth/sessions', { token: local.access_token });
    expect(sessions.body.sessions.map((x: { method: string }) => x.method)).toEqual(['password']);
  });

  it('links from a signed-in session, then signs in to that account; unlink follows the last-method rule', async () => {
    const s = await server();
    const local = await registerUser(s.app);
    const p = person({ email: local.address });
    expect((await start(s, { return_to: RETURN, purpose: 'link' })).status).toBe(401);
    const code = await loginCode(s, p, { purpose: 'link' }, local.access_token);
    const linked = await complete(s, { login_code: code }, local.access_token);
    expect(linked.status, JSON.stringify(linked.body)).toBe(204);
    const viaOidc = await signIn(s, p);
    const profile = await call(s.app, 'GET', '/v1/auth/profile', { token: viaOidc.access_token });
    expect(profile.body.address).toBe(local.address);
    // Another account cannot take the same identity.
    const other = await registerUser(s.app);
    expect(await flowError(s, p, { purpose: 'link' }, other.access_token)).toBe('error.oidc.already_linked');
    // Unlinking a local account with a password works once; then there is nothing to unlink.
    expect((await call(s.app, 'DELETE', '/v1/auth/oidc/link', { token: local.access_token })).status).toBe(204);
    expect((await call(s.app, 'DELETE', '/v1/auth/oidc/link', { token: local.access_token })).status).toBe(404);
    expect(await flowError(s, p)).toBe('error.auth.user_already_exists');
    // An account the provider created has no password: the provider is its last way in.
    const only = await signIn(s, person());
    const refused = await call(s.app, 'DELETE', '/v1/auth/oidc/link', { token: only.access_token });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('error.auth.last_sign_in_method');
  });

  it('link and reauthenticate codes are redeemed only by the account that started them', async () => {
    const s = await server();
    const a = await registerUser(s.app);
    const b = await registerUser(s.app);
    const code = await loginCode(s, person(), { purpose: 'link' }, a.access_token);
    const none = await complete(s, { login_code: code });
    expect(none.status).toBe(401);
    // That attempt used the code up.
    expect((await complete(s, { login_code: code }, a.access_token)).body.code).toBe('error.auth.login_code_invalid');
    const code2 = await loginCode(s, person(), { purpose: 'link' }, a.access_token);
    const wrong = await complete(s, { login_code: code2 }, b.access_token);
    expect(wrong.status).toBe(403);
    expect(wrong.body.code).toBe('error.auth.not_the_initiator');
  });

  it('reauthenticates with max_age=0 and a fresh auth_time; a stale one is refused', async () => {
    const s = await server();
    const p = person();
    const pair = await signIn(s, p);
    const started = await start(s, { return_to: RETURN, purpose: 'reauthenticate' }, pair.access_token);
    expect(new URL(started.body.authorization_url).searchParams.get('max_age')).toBe('0');
    const back = await deliver(s, await atProvider(started.body.authorization_url, p));
    const done = await complete(s, { login_code: back.location!.searchParams.get('login_code') }, pair.access_token);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(Math.abs(Date.parse(done.body.reauthenticated_at) - Date.now())).toBeLessThan(60_000);
    // The provider authenticated the person, but six minutes pass before the callback arrives.
    const again = await start(s, { return_to: RETURN, purpose: 'reauthenticate' }, pair.access_token);
    const url = await atProvider(again.body.authorization_url, p);
    s.clock.advance(6 * 60_000);
    const stale = await deliver(s, url);
    expect(stale.location!.searchParams.get('error')).toBe('error.oidc.reauthentication_stale');
    // Reauthenticating as someone else is refused too.
    s.clock.set(Date.now());
    expect(await flowError(s, person(), { purpose: 'reauthenticate' }, pair.access_token)).toBe(
      'error.auth.not_the_initiator',
    );
  });

  it('the provider saying no comes back as error.oidc.provider_denied', async () => {
    const s = await server();
    expect(await flowError(s, 'deny')).toBe('error.oidc.provider_denied');
  });

  it('a state is used once; absent, unknown, replayed or expired states are 400 state_invalid', async () => {
    const s = await server();
    const started = await start(s, { return_to: RETURN });
    const url = await atProvider(started.body.authorization_url, person());
    expect((await deliver(s, url)).status).toBe(302);
    const replay = await deliver(s, url);
    expect(replay.status).toBe(400);
    expect(replay.body.code).toBe('error.oidc.state_invalid');
    expect(replay.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const wrong = new URL(url);
    wrong.searchParams.set('state', toBase64url(new Uint8Array(32).fill(1)));
    expect((await deliver(s, wrong)).body.code).toBe('error.oidc.state_invalid');
    wrong.searchParams.delete('state');
    expect((await deliver(s, wrong)).body.code).toBe('error.oidc.state_invalid');
    // A flow older than ten minutes is gone.
    const late = await start(s, { return_to: RETURN });
    const lateUrl = await atProvider(late.body.authorization_url, person());
    s.clock.advance(600_001);
    expect((await deliver(s, lateUrl)).body.code).toBe('error.oidc.state_invalid');
  });

  it('a provider code replayed into another flow fails the exchange; a login code is good once and for 60 s', async () => {
    const s = await server();
    const p = person();
    const first = await start(s, { return_to: RETURN });
    const firstUrl = await atProvider(first.body.authorization_url, p);
    const code = (await deliver(s, firstUrl)).location!.searchParams.get('login_code')!;
    // The provider's code again, under the state of a new flow.
    const second = await start(s, { return_to: RETURN });
    const secondState = new URL(second.body.authorization_url).searchParams.get('state')!;
    const replayed = new URL(firstUrl);
    replayed.searchParams.set('state', secondState);
    expect((await deliver(s, replayed)).location!.searchParams.get('error')).toBe('error.oidc.exchange_failed');
    expect((await complete(s, { login_code: code })).status).toBe(200);
    const again = await complete(s, { login_code: code });
    expect(again.status).toBe(401);
    expect(again.body.code).toBe('error.auth.login_code_invalid');
    const slow = await loginCode(s, p);
    s.clock.advance(60_000);
    expect((await complete(s, { login_code: slow })).body.code).toBe('error.auth.login_code_invalid');
    expect((await complete(s, { login_code: 'nonsense' })).body.code).toBe('error.auth.login_code_invalid');
    expect((await complete(s, { login_code: slow, extra: 1 })).status).toBe(400);
  });

  it.each([
    ['a nonce from another flow', (c: Record<string, unknown>) => ({ ...c, nonce: 'another-flow-nonce' })],
    ['another audience', (c: Record<string, unknown>) => ({ ...c, aud: 'some-other-client' })],
    ['another issuer', (c: Record<string, unknown>) => ({ ...c, iss: 'https://evil.example' })],
    [
      'an expired token',
      (c: Record<string, unknown>) => ({
        ...c,
        iat: Math.floor(Date.now() / 1000) - 7200,
        exp: Math.floor(Date.now() / 1000) - 3600,
      }),
    ],
  ])('an ID token with %s is refused as error.oidc.id_token_invalid', async (_what, edit) => {
    const s = await tamperedServer(edit);
    expect(await flowError(s, person())).toBe('error.oidc.id_token_invalid');
  });

  it('the tampering path itself is sound: a token re-signed unchanged is accepted', async () => {
    const s = await tamperedServer((c) => c);
    expect(await loginCode(s, person())).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('an ID token whose signature does not verify against the provider JWKS is refused', async () => {
    const other = await startTestProvider({ redirectUris: [CALLBACK] });
    try {
      const rp = new OidcRelyingParty({
        issuer: idp.issuer,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        redirectUri: CALLBACK,
        scopes: 'openid email profile',
        logger: new MemoryLogger(),
        // Same claims, same kid, another provider's private key.
        fetch: idp.tamperingFetch((c) => c, other.sign),
      });
      const s = await server({}, idp, { identityProvider: rp });
      expect(await flowError(s, person())).toBe('error.oidc.id_token_invalid');
    } finally {
      await other.close();
    }
  });

  it('an app scheme return needs app_challenge, and complete needs the matching app_verifier', async () => {
    const s = await server();
    const p = person();
    const missing = await start(s, { return_to: APP_RETURN, app_challenge: undefined });
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('error.oidc.app_challenge_required');
    const verifier = toBase64url(new Uint8Array(48).fill(3));
    const challenge = toBase64url(sha256(utf8(verifier)));
    const started = await start(s, { return_to: APP_RETURN, app_challenge: challenge });
    expect(started.status).toBe(200);
    const back = await deliver(s, await atProvider(started.body.authorization_url, p));
    expect(back.location!.protocol).toBe('com.example.photos:');
    expect(back.location!.pathname).toBe('/oauth');
    const code = back.location!.searchParams.get('login_code')!;
    // Someone who caught the code without the verifier gets nothing, and burns it.
    expect((await complete(s, { login_code: code })).body.code).toBe('error.auth.login_code_invalid');
    expect((await complete(s, { login_code: code, app_verifier: verifier })).body.code).toBe(
      'error.auth.login_code_invalid',
    );
    const code2 = await loginCode(s, p, { return_to: APP_RETURN, app_challenge: challenge });
    expect(
      (await complete(s, { login_code: code2, app_verifier: toBase64url(new Uint8Array(48).fill(4)) })).status,
    ).toBe(401);
    const code3 = await loginCode(s, p, { return_to: APP_RETURN, app_challenge: challenge });
    expect((await complete(s, { login_code: code3, app_verifier: verifier })).status).toBe(200);
  });

  it('refuses return URIs outside the list and malformed starts', async () => {
    const s = await server();
    const outside = await start(s, { return_to: 'https://app.example/done/../evil' });
    expect(outside.status).toBe(400);
    expect(outside.body.code).toBe('error.oidc.return_to_invalid');
    expect((await start(s, {})).body.code).toBe('error.request.invalid');
    expect((await start(s, { return_to: RETURN, purpose: 'other' })).body.code).toBe('error.request.invalid');
    expect((await start(s, { return_to: RETURN, extra: true })).body.code).toBe('error.request.invalid');
  });
});

describe('accounts without a local password', { timeout: 30_000 }, () => {
  it('password login answers as a wrong password; password, reauthenticate and TOTP are 409 no_local_password', async () => {
    const s = await server();
    const p = person();
    const pair = await signIn(s, p);
    const login = await call(s.app, 'POST', '/v1/auth/login', { body: { address: p.email, password: PASSWORD } });
    const unknown = await call(s.app, 'POST', '/v1/auth/login', {
      body: { address: 'nobody-here@example.org', password: PASSWORD },
    });
    expect(login.status).toBe(401);
    expect(login.body).toEqual(unknown.body);
    for (const [path, body] of [
      ['/v1/auth/password', { current_password: PASSWORD, new_password: `${PASSWORD}!` }],
      ['/v1/auth/reauthenticate', { password: PASSWORD }],
      ['/v1/auth/totp/enroll', undefined],
    ] as const) {
      const r = await call(s.app, 'POST', path, { token: pair.access_token, ...(body ? { body } : {}) });
      expect(r.status, path).toBe(409);
      expect(r.body.code, path).toBe('error.auth.no_local_password');
    }
  });
});

describe('the access token on start and complete (optional Bearer)', { timeout: 30_000 }, () => {
  /** A signed-in local account, and a revoked copy of the token of another of its sessions. */
  async function accountWithRevokedToken(s: TestServer) {
    const u = await registerUser(s.app);
    const other = await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } });
    expect(
      (await call(s.app, 'DELETE', `/v1/auth/sessions/${other.body.session_id}`, { token: u.access_token })).status,
    ).toBe(204);
    const tampered = `${u.access_token.slice(0, -4)}${u.access_token.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    return { u, revoked: other.body.access_token as string, tampered };
  }
  const challenge = (r: { headers: Headers }) => r.headers.get('www-authenticate');

  it('a presented token that is refused where the flow needs one is 401 with error="invalid_token"; none is a plain Bearer challenge', async () => {
    const s = await server();
    const { u, revoked, tampered } = await accountWithRevokedToken(s);
    for (const purpose of ['link', 'reauthenticate']) {
      for (const token of [revoked, tampered]) {
        const r = await start(s, { return_to: RETURN, purpose }, token);
        expect(r.status, purpose).toBe(401);
        expect(r.body.code).toBe('error.auth.session_invalid');
        expect(challenge(r), purpose).toBe('Bearer error="invalid_token"');
      }
      const none = await start(s, { return_to: RETURN, purpose });
      expect([none.status, challenge(none)]).toEqual([401, 'Bearer']);
    }
    // A link code redeemed with a refused token: refused as the token it is, and used up.
    const code = await loginCode(s, person(), { purpose: 'link' }, u.access_token);
    const refused = await complete(s, { login_code: code }, tampered);
    expect([refused.status, refused.body.code, challenge(refused)]).toEqual([
      401,
      'error.auth.session_invalid',
      'Bearer error="invalid_token"',
    ]);
    expect((await complete(s, { login_code: code }, u.access_token)).body.code).toBe('error.auth.login_code_invalid');
    // A good token with a bad login code: the code is refused, not the token.
    const badCode = await complete(s, { login_code: 'A'.repeat(43) }, u.access_token);
    expect([badCode.status, badCode.body.code, challenge(badCode)]).toEqual([
      401,
      'error.auth.login_code_invalid',
      'Bearer',
    ]);
  });

  it('signing in reads no token: a stale one sent along does not stop start or complete', async () => {
    const s = await server();
    const { revoked } = await accountWithRevokedToken(s);
    const code = await loginCode(s, person(), {}, revoked);
    const done = await complete(s, { login_code: code }, revoked);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.access_token).toEqual(expect.any(String));
  });

  it('the API reference lists Bearer as optional on start and complete, with X-Svc-Act-As', async () => {
    const s = await server();
    const doc = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
    for (const path of ['/v1/auth/oidc/start', '/v1/auth/oidc/complete']) {
      const op = doc.paths[path].post;
      expect(op.security, path).toEqual([{}, { bearer: [] }]);
      expect(JSON.stringify(op.parameters), path).toContain('X-Svc-Act-As');
      expect(Object.keys(op.responses), path).toEqual(expect.arrayContaining(['401', '403']));
      expect(JSON.stringify(op.responses['403']), path).toContain('error.auth.not_an_owner');
      expect(JSON.stringify(op.responses['403']), path).toContain('error.sponsored.no_identity');
    }
  });
});

describe('acting as a sponsored account (X-Svc-Act-As) on start and complete', { timeout: 30_000 }, () => {
  async function world(s: TestServer) {
    const owner = await registerUser(s.app);
    const stranger = await registerUser(s.app);
    const sponsored = (await call(s.app, 'POST', '/v1/sponsored', { token: owner.access_token })).body
      .account_id as string;
    return { owner, stranger, sponsored, actAs: { 'x-svc-act-as': sponsored } };
  }
  const startAs = (s: TestServer, token: string, headers: Record<string, string>, purpose: string) =>
    call(s.app, 'POST', '/v1/auth/oidc/start', {
      token,
      headers,
      body: { return_to: RETURN, purpose, app_challenge: APP_CHALLENGE },
    });
  const completeAs = (s: TestServer, token: string, headers: Record<string, string>, loginCode: string) =>
    call(s.app, 'POST', '/v1/auth/oidc/complete', {
      token,
      headers,
      body: { login_code: loginCode, app_verifier: APP_VERIFIER },
    });

  it('someone who does not own the account named is 403 not_an_owner, as on every other route', async () => {
    const s = await server();
    const w = await world(s);
    for (const purpose of ['link', 'reauthenticate']) {
      const r = await startAs(s, w.stranger.access_token, w.actAs, purpose);
      expect([r.status, r.body.code], purpose).toEqual([403, 'error.auth.not_an_owner']);
    }
    const code = await loginCode(s, person(), { purpose: 'link' }, w.owner.access_token);
    const r = await completeAs(s, w.stranger.access_token, w.actAs, code);
    expect([r.status, r.body.code]).toEqual([403, 'error.auth.not_an_owner']);
  });

  it('an owner acting as the sponsored account is 403 error.sponsored.no_identity, and nothing is linked to anyone', async () => {
    const s = await server();
    const w = await world(s);
    for (const purpose of ['link', 'reauthenticate']) {
      const r = await startAs(s, w.owner.access_token, w.actAs, purpose);
      expect([r.status, r.body.code], purpose).toEqual([403, 'error.sponsored.no_identity']);
    }
    // A flow the owner started as itself, completed acting as the sponsored account: refused too.
    const code = await loginCode(s, person(), { purpose: 'link' }, w.owner.access_token);
    const r = await completeAs(s, w.owner.access_token, w.actAs, code);
    expect([r.status, r.body.code]).toEqual([403, 'error.sponsored.no_identity']);
    expect((await call(s.app, 'GET', '/v1/auth/methods', { token: w.owner.access_token })).body.oidc).toEqual([]);
    expect(
      (await call(s.app, 'GET', '/v1/auth/methods', { token: w.owner.access_token, headers: w.actAs })).body.oidc,
    ).toEqual([]);
    // Without the header the owner links its own account as before.
    const own = await loginCode(s, person(), { purpose: 'link' }, w.owner.access_token);
    expect((await completeAs(s, w.owner.access_token, {}, own)).status).toBe(204);
    expect((await call(s.app, 'GET', '/v1/auth/methods', { token: w.owner.access_token })).body.oidc).toHaveLength(1);
  });
});

describe('SVC_AUTH_LOCAL=false', { timeout: 30_000 }, () => {
  it('refuses every local sign-in endpoint with 403 local_disabled while OIDC signs in', async () => {
    const s = await server({ SVC_AUTH_LOCAL: 'false' });
    const info = await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null });
    expect(info.body.auth.local).toBe(false);
    const pair = await signIn(s, person());
    const token = pair.access_token;
    const attempts: [string, Record<string, unknown> | undefined, string | undefined][] = [
      ['/v1/auth/register', { address: 'new@example.org', password: PASSWORD }, undefined],
      ['/v1/auth/login', { address: 'new@example.org', password: PASSWORD }, undefined],
      ['/v1/auth/login/verify-totp', { challenge: 'x', code: '123456' }, undefined],
      ['/v1/auth/login/recover-totp', { challenge: 'x', signature: 'y' }, undefined],
      ['/v1/auth/password', { current_password: PASSWORD, new_password: `${PASSWORD}!` }, token],
      ['/v1/auth/reauthenticate', { password: PASSWORD }, token],
      ['/v1/auth/totp/enroll', undefined, token],
      ['/v1/auth/totp/verify-enrollment', { code: '123456' }, token],
      ['/v1/auth/totp/disable', { code: '123456' }, token],
    ];
    for (const [path, body, t] of attempts) {
      const r = await call(s.app, 'POST', path, { ...(body ? { body } : {}), ...(t ? { token: t } : {}) });
      expect(r.status, path).toBe(403);
      expect(r.body.code, path).toBe('error.auth.local_disabled');
    }
    // The routes marked localAuth in the route table are exactly these, and the reference says so for each.
    expect(
      allRoutes(s.deps)
        .filter((r) => r.localAuth === true)
        .map((r) => `${r.method} ${r.path}`)
        .sort(),
    ).toEqual(attempts.map(([path]) => `POST ${path}`).sort());
    const doc = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
    for (const [path] of attempts)
      expect(JSON.stringify(doc.paths[path].post.responses['403']), path).toContain('error.auth.local_disabled');
  });
});

async function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const p = (probe.address() as { port: number }).port;
      probe.close(() => resolve(p));
    });
  });
}

describe('provider key rotation', { timeout: 30_000 }, () => {
  it('an ID token under a key the cached JWKS lacks makes the relying party fetch the keys again', async () => {
    const port = await freePort();
    const before = await startTestProvider({ redirectUris: [CALLBACK], port, kid: 'key-before' });
    const logger = new MemoryLogger();
    const rp = new OidcRelyingParty({
      issuer: before.issuer,
      clientId: before.clientId,
      clientSecret: before.clientSecret,
      redirectUri: CALLBACK,
      scopes: 'openid email profile',
      logger,
    });
    const s = await server({ SVC_OIDC_ISSUER: before.issuer }, before, { identityProvider: rp });
    await signIn(s, person(), before);
    await before.close();
    // The same issuer, now signing with a new key.
    const after = await startTestProvider({ redirectUris: [CALLBACK], port, kid: 'key-after' });
    try {
      await signIn(s, person(), after);
      expect(logger.lines.some((l) => l.event === 'oidc.keys_refresh')).toBe(true);
    } finally {
      await after.close();
    }
  });
});

describe('a provider that is down', { timeout: 30_000 }, () => {
  it('does not stop the server from starting: configured from the environment alone, OIDC answers 503', async () => {
    const issuer = `http://127.0.0.1:${await freePort()}`;
    const s = await server({ SVC_OIDC_ISSUER: issuer });
    const down = await start(s, { return_to: RETURN });
    expect(down.status).toBe(503);
    expect(down.body.code).toBe('error.auth.unavailable');
    expect((await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null })).body.auth.oidc.issuer).toBe(
      issuer,
    );
    expect(s.logger.lines.some((l) => l.event === 'oidc.discovery_failed')).toBe(true);
  });

  it('answers 503 error.auth.unavailable for OIDC while local sign-in works, and recovers when it is back', async () => {
    // A port nothing listens on, then a provider started on it.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as { port: number }).port;
        probe.close(() => resolve(p));
      });
    });
    const issuer = `http://127.0.0.1:${port}`;
    const rp = new OidcRelyingParty({
      issuer,
      clientId: 'strongroom-test',
      clientSecret: 'test-client-secret-0123456789',
      redirectUri: CALLBACK,
      scopes: 'openid email profile',
      logger: new MemoryLogger(),
      retryMs: 0,
    });
    expect(await rp.start()).toBe(false);
    const s = await server({ SVC_OIDC_ISSUER: issuer }, idp, { identityProvider: rp });
    const down = await start(s, { return_to: RETURN });
    expect(down.status).toBe(503);
    expect(down.body.code).toBe('error.auth.unavailable');
    const local = await registerUser(s.app);
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: local.address, password: PASSWORD } })).status,
    ).toBe(200);
    const late = await startTestProvider({ redirectUris: [CALLBACK], port });
    try {
      const pair = await signIn(s, person(), late);
      expect((await call(s.app, 'GET', '/v1/auth/profile', { token: pair.access_token })).status).toBe(200);
    } finally {
      await late.close();
    }
  });
});
