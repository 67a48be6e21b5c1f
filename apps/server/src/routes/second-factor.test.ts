import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codeForStep, fromBase64url, stepAt } from '@strongroom/core';
import { Argon2Hasher } from '@strongroom/adapters-node';
import { MemoryLogger, SeededRandom, TestDevice, TestIdentity, totpSecretBytes } from '@strongroom/core/testing';
import { PASSWORD, call, registerUser, testSeed, testServer, type TestServer } from '@strongroom/tests';
import { createApp } from '../app.js';
import { readConfig } from '../config.js';
import { buildDeps } from '../deps.js';

let s: TestServer;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

const problem = (status: number, code: string) => ({
  status,
  body: expect.objectContaining({ status, code, type: 'about:blank', detail: expect.any(String) }),
});
const codeNow = (secret: Uint8Array, steps = 0) => codeForStep(secret, stepAt(s.clock.now()) + steps);
/** A code the server cannot accept now: none of the five around the current step. */
const wrongCode = (secret: Uint8Array) => {
  const near = new Set([-2, -1, 0, 1, 2].map((d) => codeNow(secret, d)));
  return ['000000', '111111', '222222', '333333'].find((c) => !near.has(c))!;
};

/** Registers, publishes an identity anchor, enrolls and confirms a second factor. */
async function confirmedUser(options: { anchor?: boolean } = {}) {
  const user = await registerUser(s.app);
  const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token: user.access_token })).body
    .account_id as string;
  const identity = new TestIdentity(user.address);
  if (options.anchor ?? true) {
    const put = await call(s.app, 'PUT', '/v1/devices/directory', {
      token: user.access_token,
      raw: identity.signDirectory(accountId, 1, [new TestDevice('phone')]).slice(),
      contentType: 'application/cbor',
    });
    expect(put.status).toBe(200);
  }
  const enrolled = await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: user.access_token });
  const secret = totpSecretBytes(enrolled.body.secret);
  expect(
    (
      await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
        token: user.access_token,
        body: { code: codeNow(secret) },
      })
    ).status,
  ).toBe(204);
  s.clock.advance(30_000);
  return { ...user, accountId, identity, secret };
}

const login = (address: string, password = PASSWORD) =>
  call(s.app, 'POST', '/v1/auth/login', { body: { address, password } });
const verify = (challenge: string, code: string) =>
  call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge, code } });
const recover = (challenge: string, signature: string) =>
  call(s.app, 'POST', '/v1/auth/login/recover-totp', { body: { challenge, signature } });

describe('per-account second-factor throttle over HTTP', () => {
  it('ten wrong codes in an hour (over several challenges) hold the account: 429 with Retry-After, after the password check', async () => {
    const u = await confirmedUser();
    for (let i = 0; i < 10; i++) {
      // Two challenges' worth of wrong codes, five each (the per-challenge limit is unchanged).
      const challenge = i % 5 === 0 ? (await login(u.address)).body.challenge : undefined;
      if (challenge) (u as { challenge?: string }).challenge = challenge;
      const r = await verify((u as { challenge?: string }).challenge!, wrongCode(u.secret));
      expect(r).toMatchObject(problem(401, 'error.auth.invalid_code'));
    }
    const held = await login(u.address);
    expect(held).toMatchObject(problem(429, 'error.auth.throttled'));
    expect(held.headers.get('retry-after')).toBe('60');
    expect(held.body).not.toHaveProperty('retry_after_s');
    // A wrong password is still just a wrong password: the throttle says nothing to a stranger.
    expect(await login(u.address, 'not the password at all')).toMatchObject(
      problem(401, 'error.auth.invalid_credentials'),
    );
    // Sessions stay open; nothing is locked.
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).status).toBe(200);

    s.clock.advance(30_000);
    expect((await login(u.address)).headers.get('retry-after')).toBe('30');
    s.clock.advance(30_000);
    const c = await login(u.address);
    expect(c.status).toBe(202);
    // The eleventh wrong code doubles the delay to two minutes.
    expect(await verify(c.body.challenge, wrongCode(u.secret))).toMatchObject(problem(401, 'error.auth.invalid_code'));
    expect((await login(u.address)).headers.get('retry-after')).toBe('120');
    s.clock.advance(120_000);
    const again = await login(u.address);
    expect(again.status).toBe(202);
    expect((await verify(again.body.challenge, codeNow(u.secret))).status).toBe(200);
  });

  it('a challenge opened before the hold checks no code while it lasts, not even the right one', async () => {
    const u = await confirmedUser();
    const spare = (await login(u.address)).body.challenge as string;
    for (let i = 0; i < 2; i++) {
      const c = (await login(u.address)).body.challenge as string;
      for (let j = 0; j < 5; j++) await verify(c, wrongCode(u.secret));
    }
    const r = await verify(spare, codeNow(u.secret));
    expect(r).toMatchObject(problem(429, 'error.auth.throttled'));
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    s.clock.advance(60_000);
    expect((await verify(spare, codeNow(u.secret))).status).toBe(200);
  });

  it('wrong passwords never count, and other accounts are not held', async () => {
    const u = await confirmedUser();
    const other = await confirmedUser();
    // Nine: the most the per-address password rule lets through with room for the right one after.
    for (let i = 0; i < 9; i++) expect((await login(u.address, `wrong password ${i}`)).status).toBe(401);
    expect((await login(u.address)).status).toBe(202);
    for (let i = 0; i < 2; i++) {
      const c = (await login(u.address)).body.challenge as string;
      for (let j = 0; j < 5; j++) await verify(c, wrongCode(u.secret));
    }
    expect((await login(u.address)).status).toBe(429);
    expect((await login(other.address)).status).toBe(202);
  });
});

describe('POST /v1/auth/login/recover-totp', () => {
  it('the 202 login answer names the account; a good proof signs in and removes the factor', async () => {
    const u = await confirmedUser();
    const c = await login(u.address);
    expect(c.status).toBe(202);
    expect(c.body).toEqual({ challenge: expect.any(String), expires_in: 300, account_id: u.accountId });
    const r = await recover(
      c.body.challenge,
      u.identity.signTotpRecovery(u.accountId, fromBase64url(c.body.challenge)!),
    );
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      session_id: expect.any(String),
      session_token: expect.any(String),
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 900,
      sign_in_ticket: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/),
    });
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: r.body.access_token })).body.account_id).toBe(
      u.accountId,
    );
    // The factor is gone: the password alone signs in, and a new factor can be enrolled.
    expect((await login(u.address)).status).toBe(200);
    expect((await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: r.body.access_token })).status).toBe(200);
    // The challenge was single use.
    expect(
      await recover(c.body.challenge, u.identity.signTotpRecovery(u.accountId, fromBase64url(c.body.challenge)!)),
    ).toMatchObject(problem(401, 'error.auth.proof_invalid'));
  });

  it('a bad proof is 401 proof_invalid, burns the challenge, opens nothing and keeps the factor', async () => {
    const u = await confirmedUser();
    const sessionsBefore = (await call(s.app, 'GET', '/v1/auth/sessions', { token: u.access_token })).body.sessions
      .length;
    const bodies: unknown[] = [];
    const attempts: ((challenge: string) => string)[] = [
      (ch) => new TestIdentity('someone else').signTotpRecovery(u.accountId, fromBase64url(ch)!),
      (ch) => u.identity.signTotpRecovery('0190c000-0000-7000-8000-000000000000', fromBase64url(ch)!),
      (ch) => u.identity.signLogoutAll(u.accountId, fromBase64url(ch)!),
      () => 'not base64url!',
    ];
    for (const sign of attempts) {
      const c = (await login(u.address)).body.challenge as string;
      const bad = await recover(c, sign(c));
      expect(bad).toMatchObject(problem(401, 'error.auth.proof_invalid'));
      bodies.push({ ...bad.body, detail: undefined });
      // Burned: even the right proof and the right code fail on it now.
      expect(await recover(c, u.identity.signTotpRecovery(u.accountId, fromBase64url(c)!))).toMatchObject(
        problem(401, 'error.auth.proof_invalid'),
      );
      expect(await verify(c, codeNow(u.secret))).toMatchObject(problem(401, 'error.auth.challenge_invalid'));
    }
    expect(new Set(bodies.map((b) => JSON.stringify(b))).size).toBe(1);
    expect(await recover('A'.repeat(43), u.identity.signTotpRecovery(u.accountId, new Uint8Array(32)))).toMatchObject(
      problem(401, 'error.auth.proof_invalid'),
    );
    expect((await call(s.app, 'GET', '/v1/auth/sessions', { token: u.access_token })).body.sessions.length).toBe(
      sessionsBefore,
    );
    // The factor is still there.
    expect((await login(u.address)).status).toBe(202);
  });

  it('an account with no published anchor cannot recover; an expired challenge cannot either', async () => {
    const u = await confirmedUser({ anchor: false });
    const c = (await login(u.address)).body.challenge as string;
    expect(await recover(c, u.identity.signTotpRecovery(u.accountId, fromBase64url(c)!))).toMatchObject(
      problem(401, 'error.auth.proof_invalid'),
    );
    const v = await confirmedUser();
    const late = (await login(v.address)).body.challenge as string;
    s.clock.advance(300_000);
    expect(await recover(late, v.identity.signTotpRecovery(v.accountId, fromBase64url(late)!))).toMatchObject(
      problem(401, 'error.auth.proof_invalid'),
    );
    expect((await login(v.address)).status).toBe(202);
  });

  it('is a write for the protocol window: below Min it answers 426 and the factor stays (verify-totp still signs in)', async () => {
    const u = await confirmedUser();
    const below = '2026-02-01';
    expect(below < s.deps.config.protocolMin).toBe(true);
    const c = (await login(u.address)).body.challenge as string;
    const r = await call(s.app, 'POST', '/v1/auth/login/recover-totp', {
      version: below,
      body: { challenge: c, signature: u.identity.signTotpRecovery(u.accountId, fromBase64url(c)!) },
    });
    expect(r).toMatchObject(problem(426, 'error.protocol.below_min'));
    // Refused before anything was read: the challenge is still good for a code, and the factor stays.
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
          version: below,
          body: { challenge: c, code: codeNow(u.secret) },
        })
      ).status,
    ).toBe(200);
    expect((await login(u.address)).status).toBe(202);
    const doc = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
    expect(doc.paths['/v1/auth/login/recover-totp'].post['x-svc-write']).toBe(true);
  });

  it('is local sign-in: after a restart with SVC_AUTH_LOCAL=false, a challenge issued before it gets 403 local_disabled (a junk body too)', async () => {
    const u = await confirmedUser();
    const c = (await login(u.address)).body.challenge as string;
    // The same database, served again with local sign-in off.
    const config = readConfig({
      SVC_BASE_URL: 'http://127.0.0.1:8080',
      SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
      SVC_AUTH_LOCAL: 'false',
    });
    const off = createApp(
      await buildDeps(config, s.deps.stores, {
        clock: s.clock,
        random: new SeededRandom(testSeed()),
        logger: new MemoryLogger(),
        hasher: new Argon2Hasher(),
      }),
    );
    const proof = u.identity.signTotpRecovery(u.accountId, fromBase64url(c)!);
    expect(
      await call(off, 'POST', '/v1/auth/login/recover-totp', { body: { challenge: c, signature: proof } }),
    ).toMatchObject(problem(403, 'error.auth.local_disabled'));
    expect(
      await call(off, 'POST', '/v1/auth/login/recover-totp', {
        body: { challenge: 'A'.repeat(43), signature: 'junk' },
      }),
    ).toMatchObject(problem(403, 'error.auth.local_disabled'));
    // Nothing was used up or removed: with local sign-in on, the same proof still recovers.
    expect((await recover(c, proof)).status).toBe(200);
  });

  it('refuses malformed bodies with 400', async () => {
    expect(await call(s.app, 'POST', '/v1/auth/login/recover-totp', { body: { challenge: 'x' } })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(
      await call(s.app, 'POST', '/v1/auth/login/recover-totp', {
        body: { challenge: 'x', signature: 'y', account_id: 'z' },
      }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
  });
});
