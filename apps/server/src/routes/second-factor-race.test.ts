import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codeForStep, stepAt, THROTTLE_FREE_WRONG_CODES } from '@strongroom/core';
import { totpSecretBytes } from '@strongroom/core/testing';
import { call, registerUser, testServer, type Reply, type TestServer } from '@strongroom/tests';

/**
 * Concurrent second-factor guesses (spec §5.6): every second-factor code check counts toward the
 * per-account bound, and it is counted before the code is compared, so guesses sent together on
 * every route that checks a code (sign-in, verify-enrollment, disable) never get more than the
 * bound compared. A compared wrong code answers `error.auth.invalid_code`; one that was not
 * compared answers 429 `error.auth.throttled` with Retry-After.
 */

let s: TestServer;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

const codeNow = (secret: Uint8Array, steps = 0) => codeForStep(secret, stepAt(s.clock.now()) + steps);
const wrongCode = (secret: Uint8Array) => {
  const near = new Set([-2, -1, 0, 1, 2].map((d) => codeNow(secret, d)));
  return ['000000', '111111', '222222', '333333'].find((c) => !near.has(c))!;
};
const compared = (r: Reply) => r.body?.code === 'error.auth.invalid_code';
const throttled = (r: Reply) =>
  r.status === 429 && r.body?.code === 'error.auth.throttled' && Number(r.headers.get('retry-after')) > 0;

describe('the per-account bound holds on every code check, under concurrency', () => {
  it('wrong codes on verify-enrollment, verify-totp and disable together: at most the bound compared, the rest 429', async () => {
    const u = await registerUser(s.app);
    const enrolled = await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: u.access_token });
    const secret = totpSecretBytes(enrolled.body.secret);
    // Six wrong codes on verify-enrollment, sent together.
    const early = await Promise.all(
      Array.from({ length: 6 }, () =>
        call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
          token: u.access_token,
          body: { code: wrongCode(secret) },
        }),
      ),
    );
    expect(early.filter(compared)).toHaveLength(6);
    // The right code confirms (it is checked, and does not count as wrong).
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
          token: u.access_token,
          body: { code: codeNow(secret) },
        })
      ).status,
    ).toBe(204);
    s.clock.advance(30_000);
    const challenges: string[] = [];
    for (let i = 0; i < 8; i++)
      challenges.push(
        (
          await call(s.app, 'POST', '/v1/auth/login', {
            body: { address: u.address, password: 'correct horse battery staple' },
          })
        ).body.challenge,
      );
    const guesses = [
      ...challenges.flatMap((challenge) =>
        Array.from({ length: 4 }, () =>
          call(s.app, 'POST', '/v1/auth/login/verify-totp', { body: { challenge, code: wrongCode(secret) } }),
        ),
      ),
      ...Array.from({ length: 20 }, () =>
        call(s.app, 'POST', '/v1/auth/totp/disable', { token: u.access_token, body: { code: wrongCode(secret) } }),
      ),
      ...Array.from({ length: 10 }, () =>
        call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
          token: u.access_token,
          body: { code: wrongCode(secret) },
        }),
      ),
    ];
    const replies = await Promise.all(guesses);
    const checked = replies.filter(compared).length;
    expect(early.length + checked).toBeLessThanOrEqual(THROTTLE_FREE_WRONG_CODES);
    // Everything else was refused by the bound (verify-enrollment over a confirmed factor compares nothing: 409).
    for (const r of replies)
      expect(compared(r) || throttled(r) || r.body?.code === 'error.auth.totp_already_enrolled').toBe(true);
    expect(replies.filter(throttled).length).toBeGreaterThan(0);
    // Held: the right code is not compared either, on any route, until the delay has passed.
    const right = await call(s.app, 'POST', '/v1/auth/totp/disable', {
      token: u.access_token,
      body: { code: codeNow(secret) },
    });
    expect(throttled(right)).toBe(true);
    s.clock.advance(60_000);
    expect(
      (await call(s.app, 'POST', '/v1/auth/totp/disable', { token: u.access_token, body: { code: codeNow(secret) } }))
        .status,
    ).toBe(204);
  });

  it('disable and verify-enrollment alone are bounded too (the finding: guesses there were never counted)', async () => {
    const u = await registerUser(s.app);
    const enrolled = await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: u.access_token });
    const secret = totpSecretBytes(enrolled.body.secret);
    const replies: Reply[] = [];
    for (let i = 0; i < 15; i++)
      replies.push(
        await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
          token: u.access_token,
          body: { code: wrongCode(secret) },
        }),
      );
    expect(replies.filter(compared)).toHaveLength(THROTTLE_FREE_WRONG_CODES);
    expect(replies.slice(THROTTLE_FREE_WRONG_CODES).every(throttled)).toBe(true);
    // The sign-in is held by the same bound.
    s.clock.advance(60_000);
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
          token: u.access_token,
          body: { code: codeNow(secret) },
        })
      ).status,
    ).toBe(204);
    s.clock.advance(30_000);
    for (let i = 0; i < 3; i++)
      expect(
        compared(
          await call(s.app, 'POST', '/v1/auth/totp/disable', {
            token: u.access_token,
            body: { code: wrongCode(secret) },
          }),
        ),
      ).toBe(i === 0);
  });

  it('right codes do not count as wrong: many sign-ins in an hour are never held', async () => {
    const u = await registerUser(s.app);
    const enrolled = await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: u.access_token });
    const secret = totpSecretBytes(enrolled.body.secret);
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
          token: u.access_token,
          body: { code: codeNow(secret) },
        })
      ).status,
    ).toBe(204);
    for (let i = 0; i < THROTTLE_FREE_WRONG_CODES + 3; i++) {
      s.clock.advance(30_000);
      const c = await call(s.app, 'POST', '/v1/auth/login', {
        body: { address: u.address, password: 'correct horse battery staple' },
      });
      expect(c.status).toBe(202);
      expect(
        (
          await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
            body: { challenge: c.body.challenge, code: codeNow(secret) },
          })
        ).status,
      ).toBe(200);
    }
  }, 60_000);
});
