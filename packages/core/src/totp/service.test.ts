import { readFileSync } from 'node:fs';
import { Secret } from 'otpauth';
import { describe, expect, it } from 'vitest';
import { fromHex, toBase64url } from '../encoding/bytes.js';
import { CoreError } from '../errors.js';
import type { Principal } from '../session/service.js';
import {
  breakable,
  createCoreServices,
  FakeClock,
  MemoryLogger,
  MemoryStore,
  MemoryTotpStore,
  PlainHasher,
  SeededRandom,
} from '../testing/index.js';
import { codeForStep, stepAt } from './machine.js';
import { TotpSecretBox } from './secret-box.js';
import { TotpService } from './service.js';

const COHORT = 'ab'.repeat(32);
const PASSWORD = 'correct horse battery';

async function setup(options: { start?: number } = {}) {
  const clock = new FakeClock(options.start ?? Date.parse('2026-11-21T10:00:10.000Z'));
  const store = new MemoryStore();
  const totpStore = breakable(new MemoryTotpStore());
  const logger = new MemoryLogger();
  const core = await createCoreServices({
    store,
    clock,
    random: new SeededRandom(11),
    hasher: new PlainHasher(),
    logger,
    totpStore: totpStore.port,
  });
  const reg = await core.accounts.register({ address: 'ada@example.org', password: PASSWORD });
  if (!reg.ok) throw new Error('register');
  const who = await core.sessions.authenticate(reg.value.accessToken);
  if (!who.ok) throw new Error('authenticate');
  const principal: Principal = who.value;
  const login = (cohortHash: string | null = COHORT) =>
    core.accounts.login({ address: 'ada@example.org', password: PASSWORD, cohortHash });
  return { clock, store, totpStore, logger, core, principal, login, totp: core.totp };
}

type Env = Awaited<ReturnType<typeof setup>>;

/** Enrolls and confirms with the current code; returns the secret bytes. */
async function confirmFactor(env: Env): Promise<Uint8Array> {
  const enrolled = await env.totp.enroll(env.principal);
  if (!enrolled.ok) throw new Error(enrolled.code);
  const secret = Secret.fromBase32(enrolled.value.secret).bytes;
  const confirmed = await env.totp.verifyEnrollment(env.principal, codeForStep(secret, stepAt(env.clock.now())));
  expect(confirmed.ok).toBe(true);
  return secret;
}

async function challenge(env: Env): Promise<string> {
  const r = await env.login();
  if (!r.ok || r.value.kind !== 'challenge') throw new Error('expected a challenge');
  return r.value.challenge;
}

const openSessions = (env: Env) => env.store.listOpenSessions(env.principal.accountId);

describe('TotpService enrollment', () => {
  it('issues a 160-bit secret and an otpauth URI, stores it only sealed and never logs it', async () => {
    const env = await setup();
    const r = await env.totp.enroll(env.principal);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Secret.fromBase32(r.value.secret).bytes).toHaveLength(20);
    const uri = new URL(r.value.uri);
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.searchParams.get('secret')).toBe(r.value.secret);
    expect(uri.searchParams.get('algorithm')).toBe('SHA1');
    expect(uri.searchParams.get('digits')).toBe('6');
    expect(uri.searchParams.get('period')).toBe('30');
    expect(decodeURIComponent(uri.pathname)).toContain('ada@example.org');
    const row = await env.totpStore.port.findTotpEnrollment(env.principal.accountId);
    expect(row).toMatchObject({ state: 'pending', highestUsedStep: null });
    const secretB64 = toBase64url(Secret.fromBase32(r.value.secret).bytes);
    expect(row!.sealedSecret).not.toContain(r.value.secret);
    expect(row!.sealedSecret).not.toContain(secretB64);
    expect(JSON.stringify(env.logger.lines)).not.toContain(r.value.secret);
    expect(await env.totp.status(env.principal)).toBe('pending');
  });

  it('enrolling again while Pending replaces the secret; the old one no longer confirms', async () => {
    const env = await setup();
    const first = await env.totp.enroll(env.principal);
    const second = await env.totp.enroll(env.principal);
    if (!first.ok || !second.ok) throw new Error('enroll');
    expect(second.value.secret).not.toBe(first.value.secret);
    const step = stepAt(env.clock.now());
    const old = codeForStep(Secret.fromBase32(first.value.secret).bytes, step);
    expect(await env.totp.verifyEnrollment(env.principal, old)).toMatchObject({
      ok: false,
      code: 'error.auth.invalid_code',
    });
    const fresh = codeForStep(Secret.fromBase32(second.value.secret).bytes, step);
    expect((await env.totp.verifyEnrollment(env.principal, fresh)).ok).toBe(true);
    expect(await env.totp.status(env.principal)).toBe('confirmed');
  });

  it('refuses enroll over a confirmed factor, and verify-enrollment without a pending one', async () => {
    const env = await setup();
    expect(await env.totp.verifyEnrollment(env.principal, '123456')).toMatchObject({
      ok: false,
      code: 'error.auth.totp_not_enrolled',
    });
    await confirmFactor(env);
    expect(await env.totp.enroll(env.principal)).toMatchObject({ ok: false, code: 'error.auth.totp_already_enrolled' });
    expect(await env.totp.verifyEnrollment(env.principal, '123456')).toMatchObject({
      ok: false,
      code: 'error.auth.totp_already_enrolled',
    });
    expect(await env.totp.status(env.principal)).toBe('confirmed');
  });

  it('the enrollment code step counts as used: disable with the same code is a replay', async () => {
    const env = await setup();
    const secret = await confirmFactor(env);
    const same = codeForStep(secret, stepAt(env.clock.now()));
    expect(await env.totp.disable(env.principal, same)).toMatchObject({ ok: false, code: 'error.auth.invalid_code' });
    env.clock.advance(30_000);
    expect((await env.totp.disable(env.principal, codeForStep(secret, stepAt(env.clock.now())))).ok).toBe(true);
    expect(await env.totp.status(env.principal)).toBe('none');
    expect(await env.totp.disable(env.principal, '123456')).toMatchObject({
      ok: false,
      code: 'error.auth.totp_not_enrolled',
    });
  });

  it('malformed codes are invalid requests, not guesses', async () => {
    const env = await setup();
    await env.totp.enroll(env.principal);
    for (const code of ['', '12345', '1234567', ' 123456', '１２３４５６']) {
      expect(await env.totp.verifyEnrollment(env.principal, code)).toMatchObject({
        ok: false,
        code: 'error.request.invalid',
      });
    }
  });

  it('confirms the RFC 6238 SHA-1 vectors through the whole service path', async () => {
    const file = JSON.parse(readFileSync(new URL('../../test-vectors/totp-rfc6238.json', import.meta.url), 'utf8')) as {
      secrets_hex: { SHA1: string };
      vectors: { time: number; T: number; mode: string; totp6_derived: string }[];
    };
    const secret = fromHex(file.secrets_hex.SHA1)!;
    for (const v of file.vectors.filter((x) => x.mode === 'SHA1')) {
      const env = await setup();
      const box = new TotpSecretBox({ key: new Uint8Array(32).fill(7), random: new SeededRandom(5) });
      await env.totpStore.port.savePendingTotp({
        accountId: env.principal.accountId,
        sealedSecret: await box.seal(secret, env.principal.accountId),
        at: 0,
      });
      env.clock.set(v.time * 1000);
      // The vectors' instants are years apart: the session proves its credential at each one.
      await env.store.recordAuthentication(env.principal.sessionId, v.time * 1000);
      expect(await env.totp.verifyEnrollment(env.principal, v.totp6_derived), `t=${v.time}`).toEqual({
        ok: true,
        value: undefined,
      });
      expect((await env.totpStore.port.findTotpEnrollment(env.principal.accountId))?.highestUsedStep).toBe(v.T);
    }
  });
});

describe('TotpService sign-in', () => {
  it('login with a confirmed factor answers a challenge and opens nothing', async () => {
    const env = await setup();
    await confirmFactor(env);
    const before = (await openSessions(env)).length;
    const r = await env.login();
    expect(r).toMatchObject({ ok: true, value: { kind: 'challenge', expiresIn: 300 } });
    if (!r.ok || r.value.kind !== 'challenge') return;
    expect(r.value.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await openSessions(env)).length).toBe(before);
    expect(await env.store.listCohorts(env.principal.accountId)).toEqual([]);
  });

  it('verify-totp opens the session, records the cohort, and the challenge is single use', async () => {
    const env = await setup();
    const secret = await confirmFactor(env);
    env.clock.advance(30_000);
    const c = await challenge(env);
    const code = codeForStep(secret, stepAt(env.clock.now()));
    const r = await env.totp.verifyLogin({ challenge: c, code, cohortHash: COHORT });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect((await env.core.sessions.authenticate(r.value.accessToken)).ok).toBe(true);
    expect((await env.store.listCohorts(env.principal.accountId)).map((x) => x.cohortHash)).toEqual([COHORT]);
    env.clock.advance(30_000);
    const again = await env.totp.verifyLogin({
      challenge: c,
      code: codeForStep(secret, stepAt(env.clock.now())),
      cohortHash: null,
    });
    expect(again).toMatchObject({ ok: false, code: 'error.auth.challenge_invalid' });
  });

  it('a code used on one challenge is refused on a second challenge in the same step', async () => {
    const env = await setup();
    const secret = await confirmFactor(env);
    env.clock.advance(30_000);
    const code = codeForStep(secret, stepAt(env.clock.now()));
    const first = await challenge(env);
    const second = await challenge(env);
    expect((await env.totp.verifyLogin({ challenge: first, code, cohortHash: null })).ok).toBe(true);
    env.clock.advance(5_000);
    const sessions = (await openSessions(env)).length;
    expect(await env.totp.verifyLogin({ challenge: second, code, cohortHash: null })).toEqual({
      ok: false,
      code: 'error.auth.invalid_code',
      detail: expect.any(String),
      data: { attempts_left: 4 },
    });
    expect((await openSessions(env)).length).toBe(sessions);
  });

  it('counts attempts on the challenge: five wrong, then the right code is exhausted', async () => {
    const env = await setup();
    const secret = await confirmFactor(env);
    env.clock.advance(30_000);
    const c = await challenge(env);
    const right = codeForStep(secret, stepAt(env.clock.now()));
    const wrong = right === '000000' ? '000001' : '000000';
    for (let i = 1; i <= 5; i++) {
      expect(await env.totp.verifyLogin({ challenge: c, code: wrong, cohortHash: null })).toMatchObject({
        code: 'error.auth.invalid_code',
        data: { attempts_left: 5 - i },
      });
    }
    expect(await env.totp.verifyLogin({ challenge: c, code: right, cohortHash: null })).toMatchObject({
      ok: false,
      code: 'error.auth.challenge_exhausted',
    });
    expect(await env.totp.verifyLogin({ challenge: c, code: right, cohortHash: null })).toMatchObject({
      ok: false,
      code: 'error.auth.challenge_exhausted',
    });
    // The exhausted challenge did not burn the step: a fresh challenge still takes the code.
    expect((await env.totp.verifyLogin({ challenge: await challenge(env), code: right, cohortHash: null })).ok).toBe(
      true,
    );
  });

  it('challenges expire after five minutes; unknown and malformed ones are invalid', async () => {
    const env = await setup();
    const secret = await confirmFactor(env);
    const c = await challenge(env);
    env.clock.advance(300_000);
    const code = codeForStep(secret, stepAt(env.clock.now()));
    expect(await env.totp.verifyLogin({ challenge: c, code, cohortHash: null })).toMatchObject({
      code: 'error.auth.challenge_invalid',
    });
    expect(
      await env.totp.verifyLogin({ challenge: toBase64url(new Uint8Array(32)), code, cohortHash: null }),
    ).toMatchObject({ code: 'error.auth.challenge_invalid' });
    expect(await env.totp.verifyLogin({ challenge: 'not a challenge', code, cohortHash: null })).toMatchObject({
      code: 'error.auth.challenge_invalid',
    });
  });

  it('a factor disabled after the password step invalidates the challenge', async () => {
    const env = await setup();
    const secret = await confirmFactor(env);
    const c = await challenge(env);
    env.clock.advance(30_000);
    expect((await env.totp.disable(env.principal, codeForStep(secret, stepAt(env.clock.now())))).ok).toBe(true);
    env.clock.advance(30_000);
    const r = await env.totp.verifyLogin({
      challenge: c,
      code: codeForStep(secret, stepAt(env.clock.now())),
      cohortHash: null,
    });
    expect(r).toMatchObject({ ok: false, code: 'error.auth.challenge_invalid' });
    expect(await env.login()).toMatchObject({ ok: true, value: { kind: 'session' } });
  });

  it('a locked account is refused at verify-totp', async () => {
    const env = await setup();
    const secret = await confirmFactor(env);
    const c = await challenge(env);
    await env.store.setLocked(env.principal.accountId, env.clock.now());
    env.clock.advance(30_000);
    const r = await env.totp.verifyLogin({
      challenge: c,
      code: codeForStep(secret, stepAt(env.clock.now())),
      cohortHash: null,
    });
    expect(r).toMatchObject({ ok: false, code: 'error.auth.account_locked' });
  });
});

describe('TotpService fails closed', () => {
  async function broken(): Promise<{ env: Env; secret: Uint8Array; c: string }> {
    const env = await setup();
    const secret = await confirmFactor(env);
    const c = await challenge(env);
    env.clock.advance(30_000);
    env.totpStore.break();
    return { env, secret, c };
  }
  const unavailable = { name: 'CoreError', code: 'error.auth.unavailable' };

  it('login with a correct password throws error.auth.unavailable and opens nothing', async () => {
    const { env } = await broken();
    const before = (await openSessions(env)).length;
    await expect(env.login()).rejects.toMatchObject(unavailable);
    expect((await openSessions(env)).length).toBe(before);
  });

  it('every code check throws error.auth.unavailable', async () => {
    const { env, secret, c } = await broken();
    const code = codeForStep(secret, stepAt(env.clock.now()));
    await expect(env.totp.verifyLogin({ challenge: c, code, cohortHash: null })).rejects.toBeInstanceOf(CoreError);
    await expect(env.totp.verifyLogin({ challenge: c, code, cohortHash: null })).rejects.toMatchObject(unavailable);
    await expect(env.totp.disable(env.principal, code)).rejects.toMatchObject(unavailable);
    await expect(env.totp.verifyEnrollment(env.principal, code)).rejects.toMatchObject(unavailable);
    await expect(env.totp.enroll(env.principal)).rejects.toMatchObject(unavailable);
    env.totpStore.mend();
    expect((await env.totp.verifyLogin({ challenge: c, code, cohortHash: null })).ok).toBe(true);
  });

  it('a secret that does not open under the server key fails closed too', async () => {
    const env = await setup();
    await confirmFactor(env);
    const c = await challenge(env);
    const other = new TotpService({
      store: env.totpStore.port,
      accounts: env.store,
      sessions: env.core.sessions,
      clock: env.clock,
      random: new SeededRandom(2),
      logger: env.logger,
      secretKey: new Uint8Array(32).fill(9),
      issuer: 'Strongroom',
    });
    await expect(other.verifyLogin({ challenge: c, code: '123456', cohortHash: null })).rejects.toMatchObject(
      unavailable,
    );
  });
});

describe('a credential change committing while a sign-in opens its session', () => {
  it('verify-totp: a revoke-all after its last check and before its session is written ends it (401 challenge_invalid, nothing open)', async () => {
    const env = await setup();
    const secret = await confirmFactor(env);
    env.clock.advance(30_000);
    const c = await challenge(env);
    const open = env.store.openSession.bind(env.store);
    env.store.openSession = async (session, stamp) => {
      env.store.openSession = open;
      await env.store.closeAllSessions(session.accountId, env.clock.now());
      return open(session, stamp);
    };
    const r = await env.totp.verifyLogin({
      challenge: c,
      code: codeForStep(secret, stepAt(env.clock.now())),
      cohortHash: null,
    });
    expect(r).toMatchObject({ ok: false, code: 'error.auth.challenge_invalid' });
    expect(await openSessions(env)).toEqual([]);
  });

  it('verify-totp: a password change after the challenge opened ends it, however long the challenge has left', async () => {
    const env = await setup();
    const secret = await confirmFactor(env);
    env.clock.advance(30_000);
    const c = await challenge(env);
    env.clock.advance(1_000);
    const changed = await env.core.accounts.changePassword(env.principal, {
      currentPassword: PASSWORD,
      newPassword: 'another long password',
    });
    if (!changed.ok) throw new Error(changed.code);
    env.clock.advance(1_000);
    const r = await env.totp.verifyLogin({
      challenge: c,
      code: codeForStep(secret, stepAt(env.clock.now())),
      cohortHash: null,
    });
    expect(r).toMatchObject({ ok: false, code: 'error.auth.challenge_invalid' });
    // Only the session the password change re-keyed is open.
    expect((await openSessions(env)).map((s) => s.id)).toEqual([env.principal.sessionId]);
  });

  it('password login: a password change after the password was checked and before the session is written: 401, nothing opened', async () => {
    const env = await setup();
    const open = env.store.openSession.bind(env.store);
    env.store.openSession = async (session, stamp) => {
      env.store.openSession = open;
      const changed = await env.core.accounts.changePassword(env.principal, {
        currentPassword: PASSWORD,
        newPassword: 'another long password',
      });
      if (!changed.ok) throw new Error(changed.code);
      return open(session, stamp);
    };
    expect(await env.login()).toMatchObject({ ok: false, code: 'error.auth.invalid_credentials' });
    // Only the caller's re-keyed session is open.
    expect((await openSessions(env)).map((s) => s.id)).toEqual([env.principal.sessionId]);
  });
});
