import {
  codeForStep,
  fromBase64url,
  sha256,
  RECENT_AUTH_ACTIONS,
  stepAt,
  toBase64url,
  utf8,
  type RecentAuthAction,
} from '@strongroom/core';
import { TestDevice, TestIdentity, totpSecretBytes } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, PASSWORD, type TestServer } from '@strongroom/tests';
import { Browser, startTestProvider, type TestPerson, type TestProvider } from '@strongroom/tests/oidc';

/**
 * What a stolen access token is worth (spec §4.11, §4.12): it may read for its fifteen minutes
 * but change nothing about how the account signs in, and the owner's password change or revoke-all
 * leaves the attacker nothing. Over HTTP, against a real OpenID provider on loopback.
 */

const BASE = 'http://127.0.0.1:8080';
const CALLBACK = `${BASE}/v1/auth/oidc/callback`;
const RETURN = 'https://app.example/done';
const WINDOW_MS = 300_000;

let idp: TestProvider;
const open: TestServer[] = [];
beforeAll(async () => {
  idp = await startTestProvider({ redirectUris: [CALLBACK] });
}, 30_000);
afterAll(async () => {
  for (const s of open) await s.close();
  await idp?.close();
});

async function server(env: Record<string, string> = {}): Promise<TestServer> {
  const s = await testServer({
    SVC_OIDC_ISSUER: idp.issuer,
    SVC_OIDC_CLIENT_ID: idp.clientId,
    SVC_OIDC_CLIENT_SECRET: idp.clientSecret!,
    SVC_OIDC_RETURN_URIS: RETURN,
    ...env,
  });
  // The provider's tokens carry real times.
  s.clock.set(Date.now());
  open.push(s);
  return s;
}

/** An app instance: it keeps the verifier behind the challenge it sends. */
function app(label: string) {
  const verifier = `app-instance-${label}`.padEnd(43, 'z');
  return { verifier, challenge: toBase64url(sha256(utf8(verifier))) };
}

let people = 0;
const person = (): TestPerson => ({
  sub: `stolen-${++people}-${Math.random().toString(36).slice(2, 8)}`,
  email: `st${people}-${Math.random().toString(36).slice(2, 8)}@example.org`,
  emailVerified: true,
});
const problem = (status: number, code: string) =>
  expect.objectContaining({ status, body: expect.objectContaining({ status, code }) });

/** start → provider → callback; returns the login code the browser is sent back with. */
async function loginCode(
  s: TestServer,
  who: TestPerson,
  body: Record<string, unknown>,
  token?: string,
): Promise<string> {
  const started = await call(s.app, 'POST', '/v1/auth/oidc/start', {
    body: { return_to: RETURN, ...body },
    ...(token ? { token } : {}),
  });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  idp.willSignIn(who);
  const cb = await new Browser().follow(started.body.authorization_url, CALLBACK);
  const back = await call(s.app, 'GET', cb.pathname + cb.search, { version: null });
  const code = new URL(back.headers.get('location')!).searchParams.get('login_code');
  expect(code, back.headers.get('location')!).toBeTruthy();
  return code!;
}
const complete = (s: TestServer, body: Record<string, unknown>, token?: string) =>
  call(s.app, 'POST', '/v1/auth/oidc/complete', { body, ...(token ? { token } : {}) });
const methods = (s: TestServer, token: string) => call(s.app, 'GET', '/v1/auth/methods', { token });

async function accountOf(s: TestServer, token: string): Promise<string> {
  return (await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
}

describe('a stolen access token, end to end with a real provider', { timeout: 60_000 }, () => {
  it('cannot link: stale 403; after reauthenticate 204; the owner sees the link, unlinks it, and the attacker no longer lands on the account', async () => {
    const s = await server();
    const victim = await registerUser(s.app);
    const victimId = await accountOf(s, victim.access_token);
    const attacker = person();
    const phone = app('attacker');
    // Minutes later the access token leaks (it lives 15 minutes; the session's proof is 5 minutes old).
    s.clock.advance(WINDOW_MS + 1);
    const stolen = (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: victim.session_token } }))
      .body.access_token as string;
    const refused = await call(s.app, 'POST', '/v1/auth/oidc/start', {
      token: stolen,
      body: { return_to: RETURN, purpose: 'link', app_challenge: phone.challenge },
    });
    expect(refused).toEqual(problem(403, 'error.auth.reauthentication_required'));
    expect((await methods(s, stolen)).body).toEqual({ password: true, totp: false, oidc: [] });

    // Had the holder proved the password again (the attacker cannot), the link goes through.
    expect(
      (await call(s.app, 'POST', '/v1/auth/reauthenticate', { token: stolen, body: { password: PASSWORD } })).status,
    ).toBe(200);
    const code = await loginCode(s, attacker, { purpose: 'link', app_challenge: phone.challenge }, stolen);
    expect((await complete(s, { login_code: code, app_verifier: phone.verifier }, stolen)).status).toBe(204);
    const landed = await complete(s, {
      login_code: await loginCode(s, attacker, { app_challenge: phone.challenge }),
      app_verifier: phone.verifier,
    });
    expect(await accountOf(s, landed.body.access_token)).toBe(victimId);

    // The owner changes the password and runs revoke-all...
    const changed = await call(s.app, 'POST', '/v1/auth/password', {
      token: stolen,
      body: { current_password: PASSWORD, new_password: 'an entirely new passphrase' },
    });
    expect(changed.status).toBe(200);
    const owner = changed.body as { access_token: string; session_token: string };
    const accountId = victimId;
    const identity = new TestIdentity('victim');
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/reauthenticate', {
          token: owner.access_token,
          body: { password: 'an entirely new passphrase' },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await call(s.app, 'PUT', '/v1/devices/directory', {
          token: owner.access_token,
          raw: identity.signDirectory(accountId, 1, [new TestDevice('phone')]).slice(),
          contentType: 'application/cbor',
        })
      ).status,
    ).toBe(200);
    const ch = (await call(s.app, 'POST', '/v1/auth/logout/all/challenge', { token: owner.access_token })).body
      .challenge as string;
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/logout/all', {
          body: { challenge: ch, signature: identity.signLogoutAll(accountId, fromBase64url(ch)!) },
        })
      ).body,
    ).toEqual({ sessions_closed: 1 });
    // The password change already closed the attacker's OpenID session: revoke-all found only the owner's.
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: landed.body.access_token })).status).toBe(401);
    // ...signs in again, sees the identity they never added, and removes it.
    const back = await call(s.app, 'POST', '/v1/auth/login', {
      body: { address: victim.address, password: 'an entirely new passphrase' },
    });
    const listed = await methods(s, back.body.access_token);
    expect(listed.body).toEqual({
      password: true,
      totp: false,
      oidc: [{ issuer: idp.issuer, subject: attacker.sub, linked_at: expect.any(String) }],
    });
    expect((await call(s.app, 'DELETE', '/v1/auth/oidc/link', { token: back.body.access_token })).status).toBe(204);
    expect((await methods(s, back.body.access_token)).body.oidc).toEqual([]);
    // The attacker's sign-in now opens (at most) an account of their own, never the victim's.
    const after = await complete(s, {
      login_code: await loginCode(s, attacker, { app_challenge: phone.challenge }),
      app_verifier: phone.verifier,
    });
    if (after.status === 200) expect(await accountOf(s, after.body.access_token)).not.toBe(victimId);
    else expect(after.status).toBeGreaterThanOrEqual(400);
  });

  it('login CSRF: a victim opening the callback URL of a flow the attacker started is not signed in as the attacker', async () => {
    const s = await server();
    const attacker = person();
    // The attacker may no longer start a flow without binding it to an app instance.
    expect(await call(s.app, 'POST', '/v1/auth/oidc/start', { body: { return_to: RETURN } })).toEqual(
      problem(400, 'error.oidc.app_challenge_required'),
    );
    const theirs = app('attacker');
    const started = await call(s.app, 'POST', '/v1/auth/oidc/start', {
      body: { return_to: RETURN, app_challenge: theirs.challenge },
    });
    idp.willSignIn(attacker);
    // The attacker signs in at the provider and stops before the callback; the victim's browser opens it.
    const cb = await new Browser().follow(started.body.authorization_url, CALLBACK);
    const back = await call(s.app, 'GET', cb.pathname + cb.search, { version: null });
    const code = new URL(back.headers.get('location')!).searchParams.get('login_code')!;
    // The victim's app redeems what arrived with its own verifier (or none): nothing opens.
    const victimApp = app('victim');
    expect(await complete(s, { login_code: code, app_verifier: victimApp.verifier })).toEqual(
      problem(401, 'error.auth.login_code_invalid'),
    );
    expect(await complete(s, { login_code: code })).toEqual(problem(401, 'error.auth.login_code_invalid'));
    // And the code is used up for the attacker too.
    expect(await complete(s, { login_code: code, app_verifier: theirs.verifier })).toEqual(
      problem(401, 'error.auth.login_code_invalid'),
    );
  });

  it('link and reauthenticate completions are writes: below Min 426, nothing linked', async () => {
    const s = await server({ SVC_PROTOCOL_MIN: '2026-06-01' });
    const user = await registerUser(s.app);
    const a = app('old');
    const code = await loginCode(s, person(), { purpose: 'link', app_challenge: a.challenge }, user.access_token);
    const old = await call(s.app, 'POST', '/v1/auth/oidc/complete', {
      version: '2026-03-01',
      token: user.access_token,
      body: { login_code: code, app_verifier: a.verifier },
    });
    expect(old).toEqual(problem(426, 'error.protocol.below_min'));
    expect((await methods(s, user.access_token)).body.oidc).toEqual([]);
  });
});

const codeNow = (s: TestServer, secret: Uint8Array) => codeForStep(secret, stepAt(s.clock.now()));

/** A registered user with an anchor and a confirmed factor, all done while the sign-in was fresh. */
async function withFactor(s: TestServer) {
  const user = await registerUser(s.app);
  const accountId = await accountOf(s, user.access_token);
  const identity = new TestIdentity(user.address);
  expect(
    (
      await call(s.app, 'PUT', '/v1/devices/directory', {
        token: user.access_token,
        raw: identity.signDirectory(accountId, 1, [new TestDevice('phone')]).slice(),
        contentType: 'application/cbor',
      })
    ).status,
  ).toBe(200);
  const enrolled = await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: user.access_token });
  const secret = totpSecretBytes(enrolled.body.secret);
  expect(
    (
      await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
        token: user.access_token,
        body: { code: codeNow(s, secret) },
      })
    ).status,
  ).toBe(204);
  s.clock.advance(30_000);
  return { ...user, accountId, identity, secret };
}

describe('a stolen token and the second factor', { timeout: 30_000 }, () => {
  it('TOTP enroll with a stale session is 403 and enrolls nothing; after reauthenticate it works', async () => {
    const s = await testServer();
    open.push(s);
    const user = await registerUser(s.app);
    s.clock.advance(WINDOW_MS + 1);
    const access = (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: user.session_token } })).body
      .access_token as string;
    expect(await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: access })).toEqual(
      problem(403, 'error.auth.reauthentication_required'),
    );
    expect((await methods(s, access)).body.totp).toBe(false);
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: user.address, password: PASSWORD } })).status,
    ).toBe(200);
    expect(
      (await call(s.app, 'POST', '/v1/auth/reauthenticate', { token: access, body: { password: PASSWORD } })).status,
    ).toBe(200);
    expect((await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: access })).status).toBe(200);
  });

  /** Each credential change, done over HTTP (or by the operator, for the lock). */
  const changes: Record<string, (s: TestServer, u: Awaited<ReturnType<typeof withFactor>>) => Promise<void>> = {
    password_change: async (s, u) => {
      expect(
        (
          await call(s.app, 'POST', '/v1/auth/password', {
            token: u.access_token,
            body: { current_password: PASSWORD, new_password: PASSWORD },
          })
        ).status,
      ).toBe(200);
    },
    revoke_all: async (s, u) => {
      const ch = (await call(s.app, 'POST', '/v1/auth/logout/all/challenge', { token: u.access_token })).body
        .challenge as string;
      expect(
        (
          await call(s.app, 'POST', '/v1/auth/logout/all', {
            body: { challenge: ch, signature: u.identity.signLogoutAll(u.accountId, fromBase64url(ch)!) },
          })
        ).status,
      ).toBe(200);
    },
    totp_recovery: async (s, u) => {
      const ch = (await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } }))
        .body.challenge as string;
      const r = await call(s.app, 'POST', '/v1/auth/login/recover-totp', {
        body: { challenge: ch, signature: u.identity.signTotpRecovery(u.accountId, fromBase64url(ch)!) },
      });
      expect(r.status).toBe(200);
      // Re-arm the factor so the old challenge would otherwise still be answerable.
      const enrolled = await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: r.body.access_token });
      u.secret = totpSecretBytes(enrolled.body.secret);
      expect(
        (
          await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
            token: r.body.access_token,
            body: { code: codeNow(s, u.secret) },
          })
        ).status,
      ).toBe(204);
      s.clock.advance(30_000);
    },
    operator_lock: async (s, u) => {
      // What `npm run cli -- lock` and `unlock` do.
      await s.deps.stores.accounts.setLocked(u.accountId, s.clock.now());
      await s.deps.stores.accounts.setLocked(u.accountId, null);
    },
  };

  for (const [name, change] of Object.entries(changes)) {
    it(`a 202 challenge from before a ${name} is refused after it (401 challenge_invalid); a new one works`, async () => {
      const s = await testServer();
      open.push(s);
      const u = await withFactor(s);
      const before = await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } });
      expect(before.status).toBe(202);
      s.clock.advance(1_000);
      await change(s, u);
      s.clock.advance(31_000);
      expect(
        await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
          body: { challenge: before.body.challenge, code: codeNow(s, u.secret) },
        }),
      ).toEqual(problem(401, 'error.auth.challenge_invalid'));
      const fresh = await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } });
      expect(
        (
          await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
            body: { challenge: fresh.body.challenge, code: codeNow(s, u.secret) },
          })
        ).status,
      ).toBe(200);
    });
  }
});

describe('every action core lists answers 403 reauthentication_required over HTTP once the proof lapsed', {
  timeout: 30_000,
}, () => {
  /** What a request may need made while the session is fresh (an album for an upload link, a handle to publish). */
  interface Ctx {
    accountId: string;
    albumId?: string;
    sponsoredId?: string;
    otherId?: string;
  }
  const SEAL = Buffer.from('x25519 public key of the link......').toString('base64url');
  const prepare: Partial<Record<RecentAuthAction, (s: TestServer, token: string, ctx: Ctx) => Promise<void>>> = {
    sponsored_owner_add: async (s, token, ctx) => {
      ctx.sponsoredId = (await call(s.app, 'POST', '/v1/sponsored', { token })).body.account_id as string;
      const other = await registerUser(s.app);
      ctx.otherId = await accountOf(s, other.access_token);
    },
    discovery_publish: async (s, token) => {
      expect(
        (await call(s.app, 'PUT', '/v1/discovery/handle', { token, body: { user: `pub${++people}` } })).status,
      ).toBe(200);
    },
    upload_link_create: async (s, token, ctx) => {
      const dir = new TestIdentity('owner').signDirectory(ctx.accountId, 1, [new TestDevice('phone')]);
      expect(
        (
          await call(s.app, 'PUT', '/v1/devices/directory', {
            token,
            raw: dir.slice(),
            contentType: 'application/cbor',
          })
        ).status,
      ).toBe(200);
      ctx.albumId = (await call(s.app, 'POST', '/v1/albums', { token, body: { device_id: 'phone' } })).body
        .album_id as string;
    },
  };
  /** The request that takes each listed action. An action added to the list without a request here does not compile. */
  const requests: Record<
    RecentAuthAction,
    (s: TestServer, token: string, ctx: Ctx) => Promise<{ status: number; body: Record<string, unknown> }>
  > = {
    oidc_link: (s, token) =>
      call(s.app, 'POST', '/v1/auth/oidc/start', {
        token,
        body: { return_to: RETURN, purpose: 'link', app_challenge: app('x').challenge },
      }),
    oidc_unlink: (s, token) => call(s.app, 'DELETE', '/v1/auth/oidc/link', { token }),
    totp_enroll: (s, token) => call(s.app, 'POST', '/v1/auth/totp/enroll', { token }),
    totp_verify_enrollment: (s, token) =>
      call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', { token, body: { code: '123456' } }),
    totp_disable: (s, token) => call(s.app, 'POST', '/v1/auth/totp/disable', { token, body: { code: '123456' } }),
    first_identity_anchor: (s, token, ctx) =>
      call(s.app, 'PUT', '/v1/devices/directory', {
        token,
        raw: new TestIdentity('late').signDirectory(ctx.accountId, 1, [new TestDevice('phone')]).slice(),
        contentType: 'application/cbor',
      }),
    sponsored_owner_add: (s, token, ctx) =>
      call(s.app, 'POST', `/v1/sponsored/${ctx.sponsoredId}/owners`, { token, body: { account_id: ctx.otherId } }),
    handle_claim: (s, token) =>
      call(s.app, 'PUT', '/v1/discovery/handle', { token, body: { user: `late${++people}` } }),
    discovery_publish: (s, token) => call(s.app, 'PUT', '/v1/discovery/public', { token, body: { published: true } }),
    upload_link_create: (s, token, ctx) =>
      call(s.app, 'POST', '/v1/links', {
        token,
        body: { kind: 'upload', album_id: ctx.albumId, seal_key: SEAL, max_bytes: 500_000_000 },
      }),
    // A 204 with no body once fresh.
    account_delete: (s, token) => call(s.app, 'DELETE', '/v1/auth/account', { token }),
  };
  /** Everything any listed action could change, as its owner sees it: equal before and after a refusal. */
  async function everything(s: TestServer, token: string) {
    const get = async (path: string) => {
      const r = await call(s.app, 'GET', path, { token });
      return { status: r.status, body: r.body };
    };
    return {
      methods: await get('/v1/auth/methods'),
      directory: (await call(s.app, 'GET', '/v1/devices/directory', { token })).status,
      profile: await get('/v1/auth/profile'),
      sponsored: await get('/v1/sponsored'),
      links: await get('/v1/links'),
      quota: await get('/quota'),
    };
  }

  for (const action of RECENT_AUTH_ACTIONS) {
    it(`${action}: 403 after the window, nothing changed; the same request a fresh session makes is not refused for it`, async () => {
      const s = await server();
      const user = await registerUser(s.app);
      const ctx: Ctx = { accountId: await accountOf(s, user.access_token) };
      await prepare[action]?.(s, user.access_token, ctx);
      s.clock.advance(WINDOW_MS + 1);
      const access = (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: user.session_token } }))
        .body.access_token as string;
      const before = await everything(s, access);
      expect(await requests[action](s, access, ctx)).toEqual(problem(403, 'error.auth.reauthentication_required'));
      expect(await everything(s, access)).toEqual(before);
      expect(
        (await call(s.app, 'POST', '/v1/auth/reauthenticate', { token: access, body: { password: PASSWORD } })).status,
      ).toBe(200);
      const fresh = await requests[action](s, access, ctx);
      expect(fresh.body?.code).not.toBe('error.auth.reauthentication_required');
      expect(fresh.status, JSON.stringify(fresh.body)).toBeLessThan(500);
    });
  }
});

describe("a stale stolen token leaves nothing behind that outlives the owner's password change and revoke-all", {
  timeout: 30_000,
}, () => {
  it("it cannot make the attacker a co-owner of the victim's sponsored account, so after the clean-up the attacker acts as nothing", async () => {
    const s = await testServer();
    open.push(s);
    const victim = await withFactor(s);
    const sponsored = (await call(s.app, 'POST', '/v1/sponsored', { token: victim.access_token })).body
      .account_id as string;
    const attacker = await registerUser(s.app);
    const attackerId = await accountOf(s, attacker.access_token);
    s.clock.advance(WINDOW_MS + 1);
    const stolen = (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: victim.session_token } }))
      .body.access_token as string;
    expect(
      await call(s.app, 'POST', `/v1/sponsored/${sponsored}/owners`, {
        token: stolen,
        body: { account_id: attackerId },
      }),
    ).toEqual(problem(403, 'error.auth.reauthentication_required'));
    expect((await call(s.app, 'GET', '/v1/sponsored', { token: stolen })).body.sponsored).toEqual([
      expect.objectContaining({ owners: [victim.accountId] }),
    ]);
    // The owner cleans up: a new password, then revoke-all.
    const changed = await call(s.app, 'POST', '/v1/auth/password', {
      token: victim.access_token,
      body: { current_password: PASSWORD, new_password: `${PASSWORD}-new` },
    });
    expect(changed.status).toBe(200);
    const ch = (await call(s.app, 'POST', '/v1/auth/logout/all/challenge', { token: changed.body.access_token })).body
      .challenge as string;
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/logout/all', {
          body: { challenge: ch, signature: victim.identity.signLogoutAll(victim.accountId, fromBase64url(ch)!) },
        })
      ).status,
    ).toBe(200);
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: stolen })).status).toBe(401);
    const actAs = await call(s.app, 'GET', '/quota', {
      token: attacker.access_token,
      headers: { 'x-svc-act-as': sponsored },
    });
    expect(actAs).toEqual(problem(403, 'error.auth.not_an_owner'));
  });

  it("it creates no upload link (no guest can reserve the victim's quota), while a share link stays creatable and shows the session that made it", async () => {
    const s = await testServer();
    open.push(s);
    const victim = await registerUser(s.app);
    const accountId = await accountOf(s, victim.access_token);
    const dir = new TestIdentity('victim').signDirectory(accountId, 1, [new TestDevice('phone')]);
    expect(
      (
        await call(s.app, 'PUT', '/v1/devices/directory', {
          token: victim.access_token,
          raw: dir.slice(),
          contentType: 'application/cbor',
        })
      ).status,
    ).toBe(200);
    const albumId = (
      await call(s.app, 'POST', '/v1/albums', { token: victim.access_token, body: { device_id: 'phone' } })
    ).body.album_id as string;
    s.clock.advance(WINDOW_MS + 1);
    const stolen = (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: victim.session_token } }))
      .body.access_token as string;
    const seal = Buffer.from('x25519 public key of the link......').toString('base64url');
    expect(
      await call(s.app, 'POST', '/v1/links', {
        token: stolen,
        body: { kind: 'upload', album_id: albumId, seal_key: seal, max_bytes: 500_000_000 },
      }),
    ).toEqual(problem(403, 'error.auth.reauthentication_required'));
    const share = await call(s.app, 'POST', '/v1/links', {
      token: stolen,
      body: { kind: 'share', album_id: albumId, wrapped_key: seal },
    });
    expect(share.status).toBe(201);
    const listed = (await call(s.app, 'GET', '/v1/links', { token: victim.access_token })).body.links as Record<
      string,
      unknown
    >[];
    expect(listed).toEqual([
      expect.objectContaining({
        link_id: share.body.link_id,
        kind: 'share',
        session_id: victim.session_id,
        created_at: expect.any(String),
      }),
    ]);
  });

  it('it claims no handle and publishes nothing', async () => {
    const s = await testServer();
    open.push(s);
    const victim = await registerUser(s.app);
    s.clock.advance(WINDOW_MS + 1);
    const stolen = (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: victim.session_token } }))
      .body.access_token as string;
    expect(await call(s.app, 'PUT', '/v1/discovery/handle', { token: stolen, body: { user: 'victim' } })).toEqual(
      problem(403, 'error.auth.reauthentication_required'),
    );
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: stolen })).body.handle).toBeNull();
  });

  it('a password change is a credential proof: the owner enrols TOTP right after it, from a session that was stale', async () => {
    const s = await testServer();
    open.push(s);
    const victim = await registerUser(s.app);
    s.clock.advance(WINDOW_MS + 1);
    const stale = (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: victim.session_token } }))
      .body.access_token as string;
    expect(await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: stale })).toEqual(
      problem(403, 'error.auth.reauthentication_required'),
    );
    const changed = await call(s.app, 'POST', '/v1/auth/password', {
      token: stale,
      body: { current_password: PASSWORD, new_password: `${PASSWORD}-new` },
    });
    expect(changed.status).toBe(200);
    expect((await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: changed.body.access_token })).status).toBe(200);
  });
});

describe('revoke-all challenges are bounded', () => {
  it('at most 5 live per account: the 6th is 429 too_many with Retry-After, and nothing is created', async () => {
    const s = await testServer();
    open.push(s);
    const user = await registerUser(s.app);
    const other = await registerUser(s.app);
    for (let i = 0; i < 5; i++) {
      expect((await call(s.app, 'POST', '/v1/auth/logout/all/challenge', { token: user.access_token })).status).toBe(
        200,
      );
      s.clock.advance(1_000);
    }
    const sixth = await call(s.app, 'POST', '/v1/auth/logout/all/challenge', { token: user.access_token });
    expect(sixth).toEqual(problem(429, 'error.request.too_many'));
    expect(sixth.headers.get('retry-after')).toBe('295');
    expect((await call(s.app, 'POST', '/v1/auth/logout/all/challenge', { token: other.access_token })).status).toBe(
      200,
    );
    s.clock.advance(295_000);
    expect((await call(s.app, 'POST', '/v1/auth/logout/all/challenge', { token: user.access_token })).status).toBe(200);
  });
});

describe('GET /v1/auth/methods', () => {
  it('lists a usable password, a confirmed factor, and no token means 401', async () => {
    const s = await testServer();
    open.push(s);
    const u = await withFactor(s);
    expect((await methods(s, u.access_token)).body).toEqual({ password: true, totp: true, oidc: [] });
    expect((await call(s.app, 'GET', '/v1/auth/methods')).status).toBe(401);
  });
});
