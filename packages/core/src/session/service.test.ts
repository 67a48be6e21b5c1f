import { describe, expect, it } from 'vitest';
import {
  createCoreServices,
  FakeClock,
  MemoryLogger,
  MemoryStore,
  PlainHasher,
  SeededRandom,
  breakable,
} from '../testing/index.js';
import { CoreError } from '../errors.js';
import { DEFAULT_SESSION_POLICY } from './machine.js';

const MIN = 60_000;
const DAY = 86_400_000;

async function setup(options: { policy?: typeof DEFAULT_SESSION_POLICY } = {}) {
  const clock = new FakeClock();
  const memory = new MemoryStore();
  const broken = breakable(memory);
  const logger = new MemoryLogger();
  const core = await createCoreServices({
    store: broken.port,
    clock,
    random: new SeededRandom(7),
    hasher: new PlainHasher(),
    logger,
    ...(options.policy ? { policy: options.policy } : {}),
  });
  const reg = await core.accounts.register({ address: 'ada@example.org', password: 'correct horse battery' });
  if (!reg.ok) throw new Error(reg.code);
  return { clock, memory, broken, logger, core, pair: reg.value };
}

describe('a refresh racing a revoke (spec §4.7)', () => {
  it('the session closed between the refresh read and its issuance write: 401 session_invalid, no access token', async () => {
    const { core, pair, memory } = await setup();
    const read = memory.findSessionByTokenHash.bind(memory);
    // The revoke lands right after the refresh read the session as open.
    memory.findSessionByTokenHash = async (hash) => {
      const found = await read(hash);
      if (found) await memory.closeSession(found.accountId, found.id, found.createdAt + 1);
      return found;
    };
    expect(await core.sessions.refresh(pair.sessionToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
    expect(memory.sessions.get(pair.sessionId)!.closedAt).not.toBeNull();
  });
});

describe('a refresh with the old session token racing a password change', () => {
  /** The caller's session, signed in, and a password change it can run at any moment. */
  async function changing() {
    const t = await setup();
    const who = await t.core.sessions.authenticate(t.pair.accessToken);
    if (!who.ok) throw new Error(who.code);
    const change = async () => {
      const changed = await t.core.accounts.changePassword(who.value, {
        currentPassword: 'correct horse battery',
        newPassword: 'a brand new password',
      });
      if (!changed.ok) throw new Error(changed.code);
      return changed.value;
    };
    return { ...t, change };
  }

  it('the change commits between the refresh read and its issuance write: 401, no token', async () => {
    const { core, pair, memory, change } = await changing();
    const read = memory.findSessionByTokenHash.bind(memory);
    memory.findSessionByTokenHash = async (hash) => {
      const found = await read(hash);
      memory.findSessionByTokenHash = read;
      await change();
      return found;
    };
    expect(await core.sessions.refresh(pair.sessionToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
  });

  it('the change commits right after the issuance was recorded: the token handed out is refused from then on', async () => {
    const { core, pair, memory, clock, change } = await changing();
    clock.advance(MIN);
    const record = memory.recordIssuance.bind(memory);
    let fresh: Awaited<ReturnType<typeof change>> | null = null;
    memory.recordIssuance = async (id, hash, at, staleBefore) => {
      const done = await record(id, hash, at, staleBefore);
      memory.recordIssuance = record;
      fresh = await change();
      return done;
    };
    const raced = await core.sessions.refresh(pair.sessionToken);
    if (!raced.ok) throw new Error(raced.code);
    expect(await core.sessions.authenticate(raced.value.accessToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
    // The change's own tokens work, and the old session token refreshes nothing.
    expect((await core.sessions.authenticate(fresh!.accessToken)).ok).toBe(true);
    expect(await core.sessions.refresh(pair.sessionToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
  });
});

describe('session lifecycle (spec §4.4 to §4.10)', () => {
  it('registration opens a session and returns a working token pair', async () => {
    const { core, pair, memory } = await setup();
    const who = await core.sessions.authenticate(pair.accessToken);
    const account = memory.accounts.get(memory.sessions.get(pair.sessionId)!.accountId)!;
    // The principal carries the account read with the session (no secrets in it).
    expect(who).toStrictEqual({
      ok: true,
      value: {
        accountId: account.id,
        sessionId: pair.sessionId,
        account: {
          id: account.id,
          address: 'ada@example.org',
          displayName: null,
          createdAt: account.createdAt,
          handleUser: null,
        },
      },
    });
    // Only the hash of the session token is stored.
    const stored = memory.sessions.get(pair.sessionId)!;
    expect(stored.tokenHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(stored)).not.toContain(pair.sessionToken);
  });

  it('issuance restarts the idle clock but never moves the hard expiry', async () => {
    const { core, pair, clock, memory } = await setup();
    const created = memory.sessions.get(pair.sessionId)!.createdAt;
    for (let i = 0; i < 3; i++) {
      clock.advance(170 * DAY);
      const r = await core.sessions.refresh(pair.sessionToken);
      expect(r.ok).toBe(true);
      expect(memory.sessions.get(pair.sessionId)!.refreshedAt).toBe(clock.now());
      expect(memory.sessions.get(pair.sessionId)!.createdAt).toBe(created);
      if (clock.now() - created + 170 * DAY >= 365 * DAY) break;
    }
    clock.set(created + 365 * DAY);
    expect(await core.sessions.refresh(pair.sessionToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
  });

  it('expires after 180 days without issuance', async () => {
    const { core, pair, clock } = await setup();
    clock.advance(180 * DAY - 1);
    expect((await core.sessions.refresh(pair.sessionToken)).ok).toBe(true);
    clock.advance(180 * DAY);
    expect(await core.sessions.refresh(pair.sessionToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
  });

  it('honours configured expiries', async () => {
    const { core, pair, clock } = await setup({
      policy: { idleMs: 10 * MIN, maxMs: 30 * MIN, touchIntervalMs: MIN, reauthWindowMs: 5 * MIN },
    });
    clock.advance(9 * MIN);
    expect((await core.sessions.refresh(pair.sessionToken)).ok).toBe(true);
    clock.advance(10 * MIN);
    expect((await core.sessions.refresh(pair.sessionToken)).ok).toBe(false);
  });

  it('an access token minted before expiry lives out its own fifteen minutes', async () => {
    const { core, pair, clock } = await setup({
      policy: { idleMs: 10 * MIN, maxMs: 30 * MIN, touchIntervalMs: MIN, reauthWindowMs: 5 * MIN },
    });
    clock.advance(9 * MIN);
    const grant = await core.sessions.refresh(pair.sessionToken);
    if (!grant.ok) throw new Error('refresh');
    clock.advance(14 * MIN); // session idle-expired at 19 min, token good until 24 min
    expect((await core.sessions.authenticate(grant.value.accessToken)).ok).toBe(true);
    clock.advance(1 * MIN + 1);
    expect((await core.sessions.authenticate(grant.value.accessToken)).ok).toBe(false);
  });

  it('revocation bites on the next request, not at the token deadline', async () => {
    const { core, pair } = await setup();
    const principal = (await core.sessions.authenticate(pair.accessToken)) as {
      ok: true;
      value: { accountId: string; sessionId: string };
    };
    expect((await core.sessions.revoke(principal.value, pair.sessionId)).ok).toBe(true);
    expect(await core.sessions.authenticate(pair.accessToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
    expect(await core.sessions.refresh(pair.sessionToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
    // Revoking again, or a session of another account, is not found.
    expect(await core.sessions.revoke(principal.value, pair.sessionId)).toMatchObject({
      ok: false,
      code: 'error.not_found',
    });
  });

  it('a session of another account cannot be revoked', async () => {
    const { core, pair } = await setup();
    const other = await core.accounts.register({ address: 'bob@example.org', password: 'another long password' });
    if (!other.ok) throw new Error('register');
    const bob = (await core.sessions.authenticate(other.value.accessToken)) as {
      ok: true;
      value: { accountId: string; sessionId: string };
    };
    expect(await core.sessions.revoke(bob.value, pair.sessionId)).toMatchObject({ ok: false, code: 'error.not_found' });
    expect((await core.sessions.authenticate(pair.accessToken)).ok).toBe(true);
  });

  it('close-all closes every session of the account only', async () => {
    const { core, pair } = await setup();
    const second = await core.accounts.login({
      address: 'ADA@example.org',
      password: 'correct horse battery',
      cohortHash: null,
    });
    const other = await core.accounts.register({ address: 'bob@example.org', password: 'another long password' });
    if (!second.ok || second.value.kind !== 'session' || !other.ok) throw new Error('setup');
    const who = (await core.sessions.authenticate(pair.accessToken)) as { ok: true; value: { accountId: string } };
    expect(await core.sessions.closeAll(who.value.accountId)).toBe(2);
    expect((await core.sessions.authenticate(pair.accessToken)).ok).toBe(false);
    expect((await core.sessions.authenticate(second.value.pair.accessToken)).ok).toBe(false);
    expect((await core.sessions.authenticate(other.value.accessToken)).ok).toBe(true);
  });

  it('password change closes all and re-opens the caller under its own session id', async () => {
    const { core, pair, clock } = await setup();
    const second = await core.accounts.login({
      address: 'ada@example.org',
      password: 'correct horse battery',
      cohortHash: null,
    });
    if (!second.ok || second.value.kind !== 'session') throw new Error('login');
    clock.advance(1000);
    const me = (await core.sessions.authenticate(pair.accessToken)) as {
      ok: true;
      value: { accountId: string; sessionId: string };
    };
    const changed = await core.accounts.changePassword(me.value, {
      currentPassword: 'correct horse battery',
      newPassword: 'a brand new passphrase',
    });
    if (!changed.ok) throw new Error(changed.code);
    expect(changed.value.sessionId).toBe(pair.sessionId);
    expect(changed.value.sessionToken).not.toBe(pair.sessionToken);
    // Old access token of the caller's own session, and the other session, are refused.
    expect((await core.sessions.authenticate(pair.accessToken)).ok).toBe(false);
    expect((await core.sessions.authenticate(second.value.pair.accessToken)).ok).toBe(false);
    expect((await core.sessions.refresh(pair.sessionToken)).ok).toBe(false);
    // The fresh pair works; the old password does not.
    expect((await core.sessions.authenticate(changed.value.accessToken)).ok).toBe(true);
    expect((await core.sessions.refresh(changed.value.sessionToken)).ok).toBe(true);
    expect(
      await core.accounts.login({ address: 'ada@example.org', password: 'correct horse battery', cohortHash: null }),
    ).toMatchObject({
      ok: false,
      code: 'error.auth.invalid_credentials',
    });
  });

  it('a wrong current password changes nothing', async () => {
    const { core, pair } = await setup();
    const me = (await core.sessions.authenticate(pair.accessToken)) as {
      ok: true;
      value: { accountId: string; sessionId: string };
    };
    expect(
      await core.accounts.changePassword(me.value, {
        currentPassword: 'not the password',
        newPassword: 'a brand new passphrase',
      }),
    ).toMatchObject({
      ok: false,
      code: 'error.auth.invalid_credentials',
    });
    expect((await core.sessions.authenticate(pair.accessToken)).ok).toBe(true);
  });

  it('writes last-used at most once a minute', async () => {
    const { core, pair, clock, memory } = await setup();
    const t0 = memory.sessions.get(pair.sessionId)!.lastUsedAt;
    clock.advance(30_000);
    await core.sessions.authenticate(pair.accessToken);
    expect(memory.sessions.get(pair.sessionId)!.lastUsedAt).toBe(t0);
    clock.advance(30_000);
    await core.sessions.authenticate(pair.accessToken);
    expect(memory.sessions.get(pair.sessionId)!.lastUsedAt).toBe(t0 + MIN);
    clock.advance(59_999);
    await core.sessions.authenticate(pair.accessToken);
    expect(memory.sessions.get(pair.sessionId)!.lastUsedAt).toBe(t0 + MIN);
  });

  it('an unreadable ledger fails closed with error.auth.unavailable', async () => {
    const { core, pair, broken } = await setup();
    broken.break();
    await expect(core.sessions.authenticate(pair.accessToken)).rejects.toMatchObject({
      code: 'error.auth.unavailable',
    });
    await expect(core.sessions.refresh(pair.sessionToken)).rejects.toBeInstanceOf(CoreError);
    await expect(core.sessions.refresh(pair.sessionToken)).rejects.toMatchObject({ code: 'error.auth.unavailable' });
    broken.mend();
    expect((await core.sessions.authenticate(pair.accessToken)).ok).toBe(true);
  });

  it('a refresh whose issuance cannot be recorded fails with error.auth.unavailable and hands out no token', async () => {
    const { core, pair, memory, clock } = await setup();
    const before = memory.sessions.get(pair.sessionId)!.refreshedAt;
    clock.advance(MIN);
    memory.recordIssuance = async () => {
      throw new Error('disk full');
    };
    const refused = await core.sessions.refresh(pair.sessionToken).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    expect(refused).toEqual({ error: expect.objectContaining({ code: 'error.auth.unavailable' }) });
    expect(memory.sessions.get(pair.sessionId)!.refreshedAt).toBe(before);
  });

  it('a failing cohort map is logged and dropped, never failing the sign-in', async () => {
    const { core, memory, logger } = await setup();
    memory.recordCohort = async () => {
      throw new Error('disk full');
    };
    const r = await core.accounts.login({
      address: 'ada@example.org',
      password: 'correct horse battery',
      cohortHash: 'a'.repeat(64),
    });
    expect(r.ok).toBe(true);
    expect(logger.lines.some((l) => l.event === 'cohort.record_failed')).toBe(true);
  });

  it('records the cohort after the session and lists it', async () => {
    const { core, clock } = await setup();
    clock.advance(5000);
    const r = await core.accounts.login({
      address: 'ada@example.org',
      password: 'correct horse battery',
      cohortHash: 'b'.repeat(64),
    });
    if (!r.ok || r.value.kind !== 'session') throw new Error('login');
    const me = (await core.sessions.authenticate(r.value.pair.accessToken)) as {
      ok: true;
      value: { accountId: string; sessionId: string };
    };
    const listed = await core.sessions.list(me.value);
    expect(listed.sessions).toHaveLength(2);
    expect(listed.sessions.find((s) => s.current)?.cohortHash).toBe('b'.repeat(64));
    expect(listed.cohorts).toEqual([{ cohortHash: 'b'.repeat(64), firstSeen: clock.now(), lastSeen: clock.now() }]);
  });

  it('a rotated-out key still verifies for the grace window, then not', async () => {
    const { core, pair, clock } = await setup();
    await core.keyRing.rotate();
    expect((await core.sessions.authenticate(pair.accessToken)).ok).toBe(true);
    const fresh = await core.sessions.refresh(pair.sessionToken);
    if (!fresh.ok) throw new Error('refresh');
    expect(JSON.parse(atob(fresh.value.accessToken.split('.')[0]!)).kid).not.toBe(
      JSON.parse(atob(pair.accessToken.split('.')[0]!)).kid,
    );
    expect((await core.keyRing.jwks()).keys).toHaveLength(2);
    // The grace window counts from a minute after the rotation (a process may sign with the old key until it re-reads the ring).
    clock.advance(DAY + MIN - 1);
    expect((await core.keyRing.jwks()).keys).toHaveLength(2);
    clock.advance(1);
    expect((await core.keyRing.jwks()).keys).toHaveLength(1);
  });
});

describe('recent authentication (decisions: what a stolen access token is worth)', () => {
  it('a session may change sign-in methods within the window after its last proof, and reauthenticate renews it', async () => {
    const { core, pair, clock, memory } = await setup({
      policy: { ...DEFAULT_SESSION_POLICY, reauthWindowMs: 5 * MIN },
    });
    const who = await core.sessions.authenticate(pair.accessToken);
    if (!who.ok) throw new Error('authenticate');
    expect(memory.sessions.get(pair.sessionId)!.authenticatedAt).toBe(clock.now());
    clock.advance(5 * MIN);
    expect((await core.sessions.requireRecentAuthentication(who.value, 'totp_enroll')).ok).toBe(true);
    clock.advance(1);
    expect(await core.sessions.requireRecentAuthentication(who.value, 'totp_enroll')).toMatchObject({
      ok: false,
      code: 'error.auth.reauthentication_required',
    });
    // A wrong password renews nothing.
    expect(await core.accounts.reauthenticate(who.value, 'wrong password entirely')).toMatchObject({ ok: false });
    expect((await core.sessions.requireRecentAuthentication(who.value, 'oidc_link')).ok).toBe(false);
    expect(await core.accounts.reauthenticate(who.value, 'correct horse battery')).toEqual({
      ok: true,
      value: { reauthenticatedAt: clock.now() },
    });
    expect((await core.sessions.requireRecentAuthentication(who.value, 'oidc_link')).ok).toBe(true);
    // A refresh is not a proof of a credential.
    clock.advance(5 * MIN + 1);
    expect((await core.sessions.refresh(pair.sessionToken)).ok).toBe(true);
    expect((await core.sessions.requireRecentAuthentication(who.value, 'oidc_link')).ok).toBe(false);
  });

  it('a closed session, another account acting with it, or a proof dated in the future counts for nothing', async () => {
    const { core, pair, clock, memory } = await setup();
    const who = await core.sessions.authenticate(pair.accessToken);
    if (!who.ok) throw new Error('authenticate');
    expect(
      (await core.sessions.requireRecentAuthentication({ ...who.value, accountId: 'someone-else' }, 'oidc_unlink')).ok,
    ).toBe(false);
    // Acting as a sponsored account: the owner's session is what is judged.
    expect(
      (
        await core.sessions.requireRecentAuthentication(
          { ...who.value, accountId: 'sponsored', actingOwnerId: who.value.accountId },
          'oidc_unlink',
        )
      ).ok,
    ).toBe(true);
    memory.sessions.set(pair.sessionId, { ...memory.sessions.get(pair.sessionId)!, authenticatedAt: clock.now() + 1 });
    expect((await core.sessions.requireRecentAuthentication(who.value, 'oidc_unlink')).ok).toBe(false);
    await core.sessions.revoke(who.value, pair.sessionId);
    expect((await core.sessions.requireRecentAuthentication(who.value, 'oidc_unlink')).ok).toBe(false);
    expect(await core.accounts.reauthenticate(who.value, 'correct horse battery')).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
  });
});
