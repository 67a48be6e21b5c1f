import { describe, expect, it } from 'vitest';
import { sha256, toBase64url, utf8 } from '../encoding/bytes.js';
import { CoreError } from '../errors.js';
import { TotpSecretBox } from '../totp/secret-box.js';
import {
  createCoreServices,
  FakeClock,
  FakeIdentityProvider,
  MemoryLogger,
  MemoryOidcStore,
  MemoryRegistrationAllowlist,
  MemoryStore,
  PlainHasher,
  SeededRandom,
  type FakePerson,
} from '../testing/index.js';
import { OidcService } from './service.js';
import { DEFAULT_PROTOCOL_WINDOW, type ProtocolWindow } from '../versioning/protocol.js';
import type { RegistrationMode } from '../registration/rules.js';

const RETURN = 'https://app.example/done';
const V = DEFAULT_PROTOCOL_WINDOW.max;
/** The app's PKCE pair toward this server: every flow needs one now. */
const APP_VERIFIER = 'service-test-app-verifier'.padEnd(43, 'x');
const APP_CHALLENGE = toBase64url(sha256(utf8(APP_VERIFIER)));
const APP = 'com.example.photos:/oauth';

async function setup(
  options: { localSignIn?: boolean; window?: ProtocolWindow; registration?: RegistrationMode } = {},
) {
  const accounts = new MemoryStore();
  const ports = { accounts, oidc: new MemoryOidcStore(accounts) };
  const clock = new FakeClock();
  const random = new SeededRandom(11);
  const logger = new MemoryLogger();
  const allowlist = new MemoryRegistrationAllowlist();
  const core = await createCoreServices({
    store: ports.accounts,
    clock,
    random,
    hasher: new PlainHasher(),
    logger,
    registration: { mode: options.registration ?? 'open', allowlist },
  });
  const provider = new FakeIdentityProvider('https://idp.example', () => clock.now());
  const oidc = new OidcService({
    provider,
    flows: ports.oidc,
    links: ports.oidc,
    accounts: ports.accounts,
    sessions: core.sessions,
    registration: core.registration,
    sealer: new TotpSecretBox({ key: new Uint8Array(32).fill(5), random }),
    clock,
    random,
    logger,
    returnUris: [RETURN, APP],
    localSignIn: options.localSignIn ?? true,
    window: options.window ?? DEFAULT_PROTOCOL_WINDOW,
  });
  const principalOf = async (accessToken: string) => {
    const who = await core.sessions.authenticate(accessToken);
    if (!who.ok) throw new Error('not authenticated');
    return who.value;
  };

  /** Start → provider → callback; returns the callback outcome. */
  async function flow(
    person: FakePerson,
    options: {
      purpose?: 'sign_in' | 'link' | 'reauthenticate';
      caller?: { accountId: string; sessionId: string };
      returnTo?: string;
      appChallenge?: string;
      authTime?: number;
    } = {},
  ) {
    const started = await oidc.start(
      {
        returnTo: options.returnTo ?? RETURN,
        purpose: options.purpose ?? 'sign_in',
        appChallenge: options.appChallenge ?? APP_CHALLENGE,
      },
      options.caller ?? null,
    );
    if (!started.ok) throw new Error(started.code);
    const state = new URL(started.value.authorizationUrl).searchParams.get('state')!;
    return {
      state,
      url: started.value.authorizationUrl,
      outcome: await oidc.callback(provider.signIn(state, person, options.authTime)),
    };
  }
  async function signIn(person: FakePerson) {
    const { outcome } = await flow(person);
    if (outcome.kind !== 'redirect' || !('loginCode' in outcome)) throw new Error(JSON.stringify(outcome));
    const done = await oidc.complete(
      { loginCode: outcome.loginCode, appVerifier: APP_VERIFIER, cohortHash: null, version: V },
      null,
    );
    if (!done.ok || done.value.kind !== 'session') throw new Error(JSON.stringify(done));
    return principalOf(done.value.pair.accessToken);
  }
  return { ports, clock, provider, oidc, core, flow, signIn, logger, allowlist };
}

const ann: FakePerson = { subject: 'ann', email: 'Ann@Example.org', emailVerified: true, name: 'Ann' };

describe('OidcService with a fake provider', () => {
  it('creates the account on first sign-in, reuses it after, and opens oidc sessions', async () => {
    const t = await setup();
    const first = await t.signIn(ann);
    const second = await t.signIn({ ...ann, name: 'Other' });
    expect(second.accountId).toBe(first.accountId);
    const account = await t.ports.accounts.findAccountById(first.accountId);
    expect(account).toMatchObject({
      address: 'Ann@Example.org',
      addressKey: 'ann@example.org',
      passwordHash: null,
      displayName: 'Ann',
    });
    const sessions = await t.ports.accounts.listOpenSessions(first.accountId);
    expect(sessions.map((s) => s.method)).toEqual(['oidc', 'oidc']);
  });

  it('asks the provider for PKCE S256, a nonce bound to the state, and max_age=0 only when reauthenticating', async () => {
    const t = await setup();
    const { state, url } = await t.flow(ann);
    const request = t.provider.requests.get(state)!;
    expect(request.codeChallenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(request.nonce).not.toBe(state);
    expect(request.maxAge).toBeUndefined();
    expect(new URL(url).searchParams.get('max_age')).toBeNull();
    // Nothing secret is stored in the clear: the flow is keyed on the state's hash.
    const caller = await t.signIn(ann);
    const r = await t.oidc.start({ returnTo: RETURN, purpose: 'reauthenticate', appChallenge: APP_CHALLENGE }, caller);
    expect(r.ok && new URL(r.value.authorizationUrl).searchParams.get('max_age')).toBe('0');
    for (const f of t.ports.oidc.flows.values()) {
      expect(f.sealedVerifier.startsWith('v1.')).toBe(true);
      expect(f.stateHash).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it('an unverified email gives no address; a verified one held elsewhere is refused and creates nothing', async () => {
    const t = await setup();
    const p = await t.signIn({ subject: 'u', email: 'u@example.org', emailVerified: false });
    expect((await t.ports.accounts.findAccountById(p.accountId))?.address).toBeNull();
    await t.signIn(ann);
    const before = t.ports.accounts.accounts.size;
    const { outcome } = await t.flow({ subject: 'someone-else', email: 'ANN@example.org', emailVerified: true });
    expect(outcome).toEqual({ kind: 'redirect', returnTo: RETURN, error: 'error.auth.user_already_exists' });
    expect(t.ports.accounts.accounts.size).toBe(before);
    expect(await t.ports.oidc.findLink('https://idp.example', 'someone-else')).toBeNull();
  });

  it('a first sign-in that would create an account follows the registration rule; a linked identity still signs in', async () => {
    const closed = await setup({ registration: 'closed' });
    const { outcome } = await closed.flow(ann);
    expect(outcome).toEqual({ kind: 'redirect', returnTo: RETURN, error: 'error.auth.registration_closed' });
    expect(closed.ports.accounts.accounts.size).toBe(0);
    expect(await closed.ports.oidc.findLink('https://idp.example', 'ann')).toBeNull();

    const listed = await setup({ registration: 'allowlist' });
    expect((await listed.flow(ann)).outcome).toMatchObject({ error: 'error.auth.registration_closed' });
    expect(
      (await listed.flow({ subject: 'nomail', email: 'x@example.org', emailVerified: false })).outcome,
    ).toMatchObject({ error: 'error.auth.registration_closed' });
    expect((await listed.core.registration.allow('@EXAMPLE.org')).ok).toBe(true);
    const first = await listed.signIn(ann);
    // Taken off the list, the account it made still signs in: the rule is about creating accounts.
    expect((await listed.core.registration.disallow('@example.org')).ok).toBe(true);
    expect((await listed.signIn(ann)).accountId).toBe(first.accountId);
    expect(
      (await listed.flow({ subject: 'bob', email: 'bob@example.org', emailVerified: true })).outcome,
    ).toMatchObject({ error: 'error.auth.registration_closed' });
  });

  it('links to the initiator at complete, and refuses an identity bound to another account', async () => {
    const t = await setup();
    const owner = await t.signIn(ann);
    const other = await t.signIn({ subject: 'bob' });
    const { outcome } = await t.flow({ subject: 'ann-work' }, { purpose: 'link', caller: owner });
    if (outcome.kind !== 'redirect' || !('loginCode' in outcome)) throw new Error('no code');
    // Not linked until complete.
    expect(await t.ports.oidc.findLink('https://idp.example', 'ann-work')).toBeNull();
    expect(
      await t.oidc.complete(
        { loginCode: outcome.loginCode, appVerifier: APP_VERIFIER, cohortHash: null, version: V },
        owner,
      ),
    ).toEqual({ ok: true, value: { kind: 'linked' } });
    expect((await t.ports.oidc.findLink('https://idp.example', 'ann-work'))?.accountId).toBe(owner.accountId);
    const taken = await t.flow({ subject: 'ann-work' }, { purpose: 'link', caller: other });
    expect(taken.outcome).toMatchObject({ error: 'error.oidc.already_linked' });
  });

  it('reauthentication needs a fresh auth_time from the initiator own identity', async () => {
    const t = await setup();
    const me = await t.signIn(ann);
    const fresh = await t.flow(ann, { purpose: 'reauthenticate', caller: me, authTime: t.clock.now() - 60_000 });
    if (fresh.outcome.kind !== 'redirect' || !('loginCode' in fresh.outcome)) throw new Error('no code');
    expect(
      await t.oidc.complete(
        { loginCode: fresh.outcome.loginCode, appVerifier: APP_VERIFIER, cohortHash: null, version: V },
        me,
      ),
    ).toEqual({
      ok: true,
      value: { kind: 'reauthenticated', at: t.clock.now() - 60_000 },
    });
    const stale = await t.flow(ann, { purpose: 'reauthenticate', caller: me, authTime: t.clock.now() - 301_000 });
    expect(stale.outcome).toMatchObject({ error: 'error.oidc.reauthentication_stale' });
    const stranger = await t.flow({ subject: 'stranger' }, { purpose: 'reauthenticate', caller: me });
    expect(stranger.outcome).toMatchObject({ error: 'error.auth.not_the_initiator' });
  });

  it('maps the provider outcomes to the fixed codes and always uses the state up', async () => {
    const t = await setup();
    const started = await t.oidc.start({ returnTo: RETURN, purpose: 'sign_in', appChallenge: APP_CHALLENGE }, null);
    const state = started.ok ? new URL(started.value.authorizationUrl).searchParams.get('state')! : '';
    expect(await t.oidc.callback({ state, error: 'access_denied' })).toEqual({
      kind: 'redirect',
      returnTo: RETURN,
      error: 'error.oidc.provider_denied',
    });
    expect(await t.oidc.callback({ state, code: 'x' })).toEqual({ kind: 'state_invalid' });
    t.provider.failNext = 'exchange_failed';
    expect((await t.flow(ann)).outcome).toMatchObject({ error: 'error.oidc.exchange_failed' });
    t.provider.failNext = 'id_token_invalid';
    expect((await t.flow(ann)).outcome).toMatchObject({ error: 'error.oidc.id_token_invalid' });
    expect(await t.oidc.callback({ code: 'x' })).toEqual({ kind: 'state_invalid' });
    expect(await t.oidc.callback({ state: 'short', code: 'x' })).toEqual({ kind: 'state_invalid' });
  });

  it('the provider being down at start throws error.auth.unavailable and stores nothing', async () => {
    const t = await setup();
    t.provider.up = false;
    await expect(
      t.oidc.start({ returnTo: RETURN, purpose: 'sign_in', appChallenge: APP_CHALLENGE }, null),
    ).rejects.toMatchObject({ code: 'error.auth.unavailable' });
    await expect(
      t.oidc.start({ returnTo: RETURN, purpose: 'sign_in', appChallenge: APP_CHALLENGE }, null),
    ).rejects.toBeInstanceOf(CoreError);
    expect(t.ports.oidc.flows.size).toBe(0);
  });

  it('a provider unreachable at the callback ends the flow as exchange_failed, state used up', async () => {
    const t = await setup();
    const started = await t.oidc.start({ returnTo: RETURN, purpose: 'sign_in', appChallenge: APP_CHALLENGE }, null);
    const state = started.ok ? new URL(started.value.authorizationUrl).searchParams.get('state')! : '';
    const params = t.provider.signIn(state, ann);
    t.provider.up = false;
    expect(await t.oidc.callback(params)).toEqual({
      kind: 'redirect',
      returnTo: RETURN,
      error: 'error.oidc.exchange_failed',
    });
    t.provider.up = true;
    expect(await t.oidc.callback(params)).toEqual({ kind: 'state_invalid' });
  });

  it('binds an app-scheme flow to the app verifier', async () => {
    const t = await setup();
    const verifier = 'x'.repeat(50);
    const challenge = toBase64url(sha256(utf8(verifier)));
    const { outcome } = await t.flow(ann, { returnTo: APP, appChallenge: challenge });
    if (outcome.kind !== 'redirect' || !('loginCode' in outcome)) throw new Error('no code');
    expect(outcome.returnTo).toBe(APP);
    expect(
      await t.oidc.complete(
        { loginCode: outcome.loginCode, appVerifier: 'y'.repeat(50), cohortHash: null, version: V },
        null,
      ),
    ).toMatchObject({ code: 'error.auth.login_code_invalid' });
    const second = await t.flow(ann, { returnTo: APP, appChallenge: challenge });
    if (second.outcome.kind !== 'redirect' || !('loginCode' in second.outcome)) throw new Error('no code');
    expect(
      (
        await t.oidc.complete(
          { loginCode: second.outcome.loginCode, appVerifier: verifier, cohortHash: null, version: V },
          null,
        )
      ).ok,
    ).toBe(true);
  });

  it('a locked account does not get a session from a login code', async () => {
    const t = await setup();
    const me = await t.signIn(ann);
    await t.ports.accounts.setLocked(me.accountId, 1);
    const { outcome } = await t.flow(ann);
    if (outcome.kind !== 'redirect' || !('loginCode' in outcome)) throw new Error('no code');
    expect(
      await t.oidc.complete(
        { loginCode: outcome.loginCode, appVerifier: APP_VERIFIER, cohortHash: null, version: V },
        null,
      ),
    ).toMatchObject({ code: 'error.auth.account_locked' });
  });

  it('unlink keeps the last way in', async () => {
    const t = await setup();
    const me = await t.signIn(ann);
    expect(await t.oidc.unlink(me)).toMatchObject({ code: 'error.auth.last_sign_in_method' });
    const local = await t.core.accounts.register({ address: 'local@example.org', password: 'correct horse battery' });
    if (!local.ok) throw new Error('register');
    const who = await t.core.sessions.authenticate(local.value.accessToken);
    if (!who.ok) throw new Error('authenticate');
    const principal = who.value;
    expect(await t.oidc.unlink(principal)).toMatchObject({ code: 'error.not_found' });
    const { outcome } = await t.flow({ subject: 'local-idp' }, { purpose: 'link', caller: principal });
    if (outcome.kind !== 'redirect' || !('loginCode' in outcome)) throw new Error('no code');
    await t.oidc.complete(
      { loginCode: outcome.loginCode, appVerifier: APP_VERIFIER, cohortHash: null, version: V },
      principal,
    );
    expect(await t.oidc.unlink(principal)).toEqual({ ok: true, value: undefined });
    expect(await t.ports.oidc.listLinks(principal.accountId)).toEqual([]);
  });
});

describe('OidcService: what a stolen access token is worth', () => {
  const code = (outcome: { kind: string; loginCode?: string }) => {
    if (outcome.kind !== 'redirect' || outcome.loginCode === undefined) throw new Error(JSON.stringify(outcome));
    return outcome.loginCode;
  };

  it('link needs a recent sign-in at start and again at complete; unlink needs one too', async () => {
    const t = await setup();
    const owner = await t.signIn(ann);
    t.clock.advance(300_001);
    expect(await t.oidc.start({ returnTo: RETURN, purpose: 'link', appChallenge: APP_CHALLENGE }, owner)).toMatchObject(
      { ok: false, code: 'error.auth.reauthentication_required' },
    );
    expect(await t.oidc.unlink(owner)).toMatchObject({ ok: false, code: 'error.auth.reauthentication_required' });
    // Reauthenticating at the provider renews the session's proof.
    const again = await t.flow(ann, { purpose: 'reauthenticate', caller: owner, authTime: t.clock.now() });
    expect(
      (
        await t.oidc.complete(
          { loginCode: code(again.outcome), appVerifier: APP_VERIFIER, cohortHash: null, version: V },
          owner,
        )
      ).ok,
    ).toBe(true);
    t.clock.advance(299_000);
    const link = await t.flow({ subject: 'ann-work' }, { purpose: 'link', caller: owner });
    // The session's proof lapses between the callback and complete (the code still lives): nothing is linked.
    t.clock.advance(2_000);
    expect(
      await t.oidc.complete(
        { loginCode: code(link.outcome), appVerifier: APP_VERIFIER, cohortHash: null, version: V },
        owner,
      ),
    ).toMatchObject({
      ok: false,
      code: 'error.auth.reauthentication_required',
    });
    expect(await t.ports.oidc.findLink('https://idp.example', 'ann-work')).toBeNull();
  });

  it('a reauthentication auth_time more than 60 s ahead is refused like a stale one; within 60 s it counts from now', async () => {
    const t = await setup();
    const me = await t.signIn(ann);
    const ahead = await t.flow(ann, { purpose: 'reauthenticate', caller: me, authTime: t.clock.now() + 60_001 });
    expect(ahead.outcome).toMatchObject({ error: 'error.oidc.reauthentication_stale' });
    const skewed = await t.flow(ann, { purpose: 'reauthenticate', caller: me, authTime: t.clock.now() + 59_000 });
    expect(
      (
        await t.oidc.complete(
          { loginCode: code(skewed.outcome), appVerifier: APP_VERIFIER, cohortHash: null, version: V },
          me,
        )
      ).ok,
    ).toBe(true);
    // Recorded no later than now: the 59 s of skew do not stretch the window.
    expect((await t.ports.accounts.findSessionById(me.sessionId))?.authenticatedAt).toBe(t.clock.now());
  });

  it('link and reauthenticate completions are writes (below Min: 426); a sign-in is not', async () => {
    const window = { min: '2026-06-01', max: '2026-11-01' };
    const t = await setup({ window });
    const old = '2026-03-01';
    const me = await t.signIn(ann);
    const link = await t.flow({ subject: 'ann-2' }, { purpose: 'link', caller: me });
    expect(
      await t.oidc.complete(
        { loginCode: code(link.outcome), appVerifier: APP_VERIFIER, cohortHash: null, version: old },
        me,
      ),
    ).toMatchObject({ code: 'error.protocol.below_min' });
    expect(await t.ports.oidc.findLink('https://idp.example', 'ann-2')).toBeNull();
    const reauth = await t.flow(ann, { purpose: 'reauthenticate', caller: me });
    expect(
      await t.oidc.complete(
        { loginCode: code(reauth.outcome), appVerifier: APP_VERIFIER, cohortHash: null, version: old },
        me,
      ),
    ).toMatchObject({ code: 'error.protocol.below_min' });
    const signIn = await t.flow(ann);
    expect(
      (
        await t.oidc.complete(
          { loginCode: code(signIn.outcome), appVerifier: APP_VERIFIER, cohortHash: null, version: old },
          null,
        )
      ).ok,
    ).toBe(true);
  });

  it('unlink counts a password only while local sign-in is on', async () => {
    const t = await setup({ localSignIn: false });
    const local = await t.core.accounts.register({ address: 'local@example.org', password: 'correct horse battery' });
    if (!local.ok) throw new Error('register');
    const who = await t.core.sessions.authenticate(local.value.accessToken);
    if (!who.ok) throw new Error('authenticate');
    const link = await t.flow({ subject: 'local-idp' }, { purpose: 'link', caller: who.value });
    await t.oidc.complete(
      { loginCode: code(link.outcome), appVerifier: APP_VERIFIER, cohortHash: null, version: V },
      who.value,
    );
    expect(await t.oidc.unlink(who.value)).toMatchObject({ code: 'error.auth.last_sign_in_method' });
    expect(await t.ports.oidc.listLinks(who.value.accountId)).toHaveLength(1);
  });

  it('a credential change ends unredeemed login codes and the flows the account started', async () => {
    const t = await setup();
    const me = await t.signIn(ann);
    const pending = await t.flow(ann);
    const started = await t.oidc.start(
      { returnTo: RETURN, purpose: 'reauthenticate', appChallenge: APP_CHALLENGE },
      me,
    );
    if (!started.ok) throw new Error(started.code);
    const state = new URL(started.value.authorizationUrl).searchParams.get('state')!;
    t.clock.advance(1);
    expect(await t.core.sessions.closeAll(me.accountId)).toBe(1);
    t.clock.advance(1);
    expect(
      await t.oidc.complete(
        { loginCode: code(pending.outcome), appVerifier: APP_VERIFIER, cohortHash: null, version: V },
        null,
      ),
    ).toMatchObject({ code: 'error.auth.login_code_invalid' });
    expect(await t.oidc.callback(t.provider.signIn(state, ann))).toEqual({ kind: 'state_invalid' });
    // What starts after the change works.
    expect((await t.signIn(ann)).accountId).toBe(me.accountId);
  });
});
