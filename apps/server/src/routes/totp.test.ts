import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codeForStep, stepAt } from '@strongroom/core';
import { totpSecretBytes } from '@strongroom/core/testing';
import { PASSWORD, call, registerUser, testServer, type TestServer } from '@strongroom/tests';

let s: TestServer;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

const problem = (status: number, code: string, extra: Record<string, unknown> = {}) => ({
  status,
  body: expect.objectContaining({
    status,
    code,
    type: 'about:blank',
    title: expect.any(String),
    detail: expect.any(String),
    ...extra,
  }),
});
const COHORT = 'c0'.repeat(32);

/** The code the server's clock is on now (or `steps` away). */
const codeNow = (secret: Uint8Array, steps = 0) => codeForStep(secret, stepAt(s.clock.now()) + steps);

/** Registers, enrolls and confirms; moves the clock to the next step so the enrollment code is behind. */
async function confirmedUser() {
  const user = await registerUser(s.app);
  const enrolled = await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: user.access_token });
  expect(enrolled.status).toBe(200);
  const secret = totpSecretBytes(enrolled.body.secret);
  const confirmed = await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
    token: user.access_token,
    body: { code: codeNow(secret) },
  });
  expect(confirmed.status).toBe(204);
  s.clock.advance(30_000);
  return { ...user, secret, enrollSecret: enrolled.body.secret as string };
}

async function challengeFor(address: string): Promise<string> {
  const r = await call(s.app, 'POST', '/v1/auth/login', { body: { address, password: PASSWORD } });
  expect(r.status).toBe(202);
  return r.body.challenge;
}

const sessionCount = async (token: string) =>
  (await call(s.app, 'GET', '/v1/auth/sessions', { token })).body.sessions.length;

describe('TOTP enrollment over HTTP', () => {
  it('enroll -> verify-enrollment -> login 202 -> verify-totp opens the session with its cohort', async () => {
    const user = await registerUser(s.app);
    const enrolled = await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: user.access_token });
    expect(enrolled.status).toBe(200);
    expect(enrolled.body).toEqual({
      secret: expect.stringMatching(/^[A-Z2-7]{32}$/),
      uri: expect.stringMatching(/^otpauth:\/\/totp\//),
    });
    const uri = new URL(enrolled.body.uri);
    expect(Object.fromEntries(uri.searchParams)).toMatchObject({
      secret: enrolled.body.secret,
      algorithm: 'SHA1',
      digits: '6',
      period: '30',
      issuer: '127.0.0.1',
    }); // the host without its port: no colon in the issuer
    const secret = totpSecretBytes(enrolled.body.secret);

    // Pending gates nothing: sign-in still opens a session directly.
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: user.address, password: PASSWORD } })).status,
    ).toBe(200);
    const wrong = codeNow(secret) === '000000' ? '000001' : '000000';
    expect(
      await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', { token: user.access_token, body: { code: wrong } }),
    ).toMatchObject(problem(400, 'error.auth.invalid_code'));
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
          token: user.access_token,
          body: { code: codeNow(secret) },
        })
      ).status,
    ).toBe(204);
    expect(await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: user.access_token })).toMatchObject(
      problem(409, 'error.auth.totp_already_enrolled'),
    );

    const before = await sessionCount(user.access_token);
    const login = await call(s.app, 'POST', '/v1/auth/login', {
      body: { address: user.address, password: PASSWORD, cohort_hash: COHORT },
    });
    expect(login.status).toBe(202);
    expect(login.body).toEqual({
      challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      expires_in: 300,
      account_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(await sessionCount(user.access_token)).toBe(before);

    s.clock.advance(30_000);
    const verified = await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
      body: { challenge: login.body.challenge, code: codeNow(secret), cohort_hash: COHORT, device_id: 'phone' },
    });
    expect(verified.status).toBe(200);
    expect(verified.body).toEqual({
      session_id: expect.any(String),
      session_token: expect.any(String),
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 900,
      sign_in_ticket: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/),
    });
    const sessions = await call(s.app, 'GET', '/v1/auth/sessions', { token: verified.body.access_token });
    expect(sessions.body.sessions).toHaveLength(before + 1);
    expect(sessions.body.sessions.find((x: { current: boolean }) => x.current).cohort_hash).toBe(COHORT);
    expect(sessions.body.cohorts.map((x: { cohort_hash: string }) => x.cohort_hash)).toEqual([COHORT]);
    // The secret is shown once and never logged.
    expect(JSON.stringify(s.logger.lines)).not.toContain(enrolled.body.secret);
  });

  it('verify-enrollment without a pending factor and disable without a factor are 409 totp_not_enrolled', async () => {
    const user = await registerUser(s.app);
    expect(
      await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
        token: user.access_token,
        body: { code: '123456' },
      }),
    ).toMatchObject(problem(409, 'error.auth.totp_not_enrolled'));
    expect(
      await call(s.app, 'POST', '/v1/auth/totp/disable', { token: user.access_token, body: { code: '123456' } }),
    ).toMatchObject(problem(409, 'error.auth.totp_not_enrolled'));
    expect(await call(s.app, 'POST', '/v1/auth/totp/enroll', {})).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
  });

  it('disable needs a live code: wrong and replayed codes are 400, a fresh one removes the factor', async () => {
    const user = await confirmedUser();
    const used = codeNow(user.secret, -1); // the enrollment code, one step back: still in the window
    expect(
      await call(s.app, 'POST', '/v1/auth/totp/disable', { token: user.access_token, body: { code: used } }),
    ).toMatchObject(problem(400, 'error.auth.invalid_code'));
    expect(
      await call(s.app, 'POST', '/v1/auth/totp/disable', {
        token: user.access_token,
        body: { code: codeNow(user.secret, 3) },
      }),
    ).toMatchObject(problem(400, 'error.auth.invalid_code'));
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/totp/disable', {
          token: user.access_token,
          body: { code: codeNow(user.secret) },
        })
      ).status,
    ).toBe(204);
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: user.address, password: PASSWORD } })).status,
    ).toBe(200);
    // And a fresh enrollment is possible again.
    expect((await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: user.access_token })).status).toBe(200);
  });

  it('codes are strict: anything but a string of six ASCII digits is 400 error.request.invalid', async () => {
    const user = await registerUser(s.app);
    await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: user.access_token });
    const vectors = JSON.parse(
      readFileSync(new URL('../../../../packages/core/test-vectors/totp-rfc6238.json', import.meta.url), 'utf8'),
    );
    for (const code of vectors.derived_window_cases.malformed_inputs_strict_policy.values as unknown[]) {
      expect(
        await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', { token: user.access_token, body: { code } }),
        JSON.stringify(code),
      ).toMatchObject(problem(400, 'error.request.invalid'));
    }
    expect(
      await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
        token: user.access_token,
        body: { code: '123456', extra: 1 },
      }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
  });
});

describe('POST /v1/auth/login/verify-totp', () => {
  it('a code is accepted once: replay on a second challenge in the same 30 s step is 401 invalid_code', async () => {
    const user = await confirmedUser();
    const [first, second] = [await challengeFor(user.address), await challengeFor(user.address)];
    const code = codeNow(user.secret);
    expect((await call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge: first, code } })).status).toBe(
      200,
    );
    s.clock.advance(10_000);
    expect(stepAt(s.clock.now())).toBe(stepAt(s.clock.now() - 10_000));
    expect(
      await call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge: second, code } }),
    ).toMatchObject(problem(401, 'error.auth.invalid_code', { attempts_left: 4 }));
    // The used challenge is gone; the second one still takes the next step's code.
    expect(
      await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
        body: { challenge: first, code: codeNow(user.secret, 1) },
      }),
    ).toMatchObject(problem(401, 'error.auth.challenge_invalid'));
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
          body: { challenge: second, code: codeNow(user.secret, 1) },
        })
      ).status,
    ).toBe(200);
  });

  it('five attempts per challenge: the sixth is 429 even with the right code', async () => {
    const user = await confirmedUser();
    const challenge = await challengeFor(user.address);
    const right = codeNow(user.secret);
    const wrong = [0, 1, 2, 3, 4, 5, 6]
      .map((d) => String(d).repeat(6))
      .find((c) => ![-1, 0, 1].some((d) => codeNow(user.secret, d) === c))!;
    // Malformed codes are refused before counting.
    expect(await call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge, code: 12345 } })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    for (let left = 4; left >= 0; left--) {
      expect(
        await call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge, code: wrong } }),
      ).toMatchObject(problem(401, 'error.auth.invalid_code', { attempts_left: left }));
    }
    expect(await call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge, code: right } })).toMatchObject(
      problem(429, 'error.auth.challenge_exhausted'),
    );
    expect(await call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge, code: right } })).toMatchObject(
      problem(429, 'error.auth.challenge_exhausted'),
    );
    // Counted on the challenge, not the account: a fresh challenge works at once.
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
          body: { challenge: await challengeFor(user.address), code: right },
        })
      ).status,
    ).toBe(200);
  });

  it('unknown and expired challenges are 401 challenge_invalid', async () => {
    const user = await confirmedUser();
    const challenge = await challengeFor(user.address);
    expect(
      await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
        body: { challenge: 'A'.repeat(43), code: codeNow(user.secret) },
      }),
    ).toMatchObject(problem(401, 'error.auth.challenge_invalid'));
    expect(
      await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
        body: { challenge: 'nope', code: codeNow(user.secret) },
      }),
    ).toMatchObject(problem(401, 'error.auth.challenge_invalid'));
    s.clock.advance(300_000);
    expect(
      await call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge, code: codeNow(user.secret) } }),
    ).toMatchObject(problem(401, 'error.auth.challenge_invalid'));
  });

  it('is not a write: a client below Min can still sign in, while enroll is refused', async () => {
    const user = await confirmedUser();
    const old = '2026-02-01';
    const login = await call(s.app, 'POST', '/v1/auth/login', {
      body: { address: user.address, password: PASSWORD },
      version: old,
    });
    expect(login.status).toBe(202);
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
          body: { challenge: login.body.challenge, code: codeNow(user.secret) },
          version: old,
        })
      ).status,
    ).toBe(200);
    expect(
      await call(s.app, 'POST', '/v1/auth/totp/disable', {
        token: user.access_token,
        body: { code: codeNow(user.secret, 1) },
        version: old,
      }),
    ).toMatchObject(problem(426, 'error.protocol.below_min'));
  });
});

describe('fail closed', () => {
  it('an unreadable enrollment store is 503 error.auth.unavailable at sign-in and at every code check', async () => {
    const user = await confirmedUser();
    const challenge = await challengeFor(user.address);
    const before = await sessionCount(user.access_token);
    s.breakTotpStore();
    expect(
      await call(s.app, 'POST', '/v1/auth/login', { body: { address: user.address, password: PASSWORD } }),
    ).toMatchObject(problem(503, 'error.auth.unavailable'));
    expect(
      await call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge, code: codeNow(user.secret) } }),
    ).toMatchObject(problem(503, 'error.auth.unavailable'));
    expect(
      await call(s.app, 'POST', '/v1/auth/totp/disable', {
        token: user.access_token,
        body: { code: codeNow(user.secret) },
      }),
    ).toMatchObject(problem(503, 'error.auth.unavailable'));
    expect(await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: user.access_token })).toMatchObject(
      problem(503, 'error.auth.unavailable'),
    );
    s.mendTotpStore();
    expect(await sessionCount(user.access_token)).toBe(before);
    expect(
      (await call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge, code: codeNow(user.secret) } }))
        .status,
    ).toBe(200);
  });

  it('an account without a factor cannot sign in either while the store is unreadable', async () => {
    const user = await registerUser(s.app);
    s.breakTotpStore();
    expect(
      await call(s.app, 'POST', '/v1/auth/login', { body: { address: user.address, password: PASSWORD } }),
    ).toMatchObject(problem(503, 'error.auth.unavailable'));
  });
});

describe('OpenAPI', () => {
  it('documents the four operations with their error codes', async () => {
    const doc = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
    for (const path of [
      '/v1/auth/totp/enroll',
      '/v1/auth/totp/verify-enrollment',
      '/v1/auth/totp/disable',
      '/v1/auth/login/verify-totp',
    ]) {
      expect(doc.paths[path]?.post, path).toBeDefined();
    }
    const text = JSON.stringify(doc.paths['/v1/auth/login/verify-totp']);
    for (const code of ['error.auth.invalid_code', 'error.auth.challenge_invalid', 'error.auth.challenge_exhausted'])
      expect(text).toContain(code);
  });
});
