import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SessionRecord } from '../ports/session-ledger.js';
import { DEFAULT_QUOTA_POLICY } from '../quota/machine.js';
import { QuotaService } from '../quota/service.js';
import { sessionStatus, type SessionPolicy } from '../session/machine.js';
import { uploadState } from '../upload/machine.js';
import { OPEN_STATES, TERMINAL_STATES } from '../upload/machine.js';
import {
  createCoreServices,
  createMemoryPorts,
  FakeClock,
  MemoryBlobStore,
  MemoryLogger,
  PlainHasher,
  SeededRandom,
} from '../testing/index.js';
import { censusBounds, sessionCounted, uploadCounted } from './census.js';
import { OperatorService } from './service.js';

const POLICY: SessionPolicy = { idleMs: 1_000, maxMs: 5_000, touchIntervalMs: 60_000, reauthWindowMs: 300_000 };

describe('the census counts what the session and upload rules call open', () => {
  it('a session is counted exactly when sessionStatus says open (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 20_000 }),
        fc.integer({ min: 0, max: 20_000 }),
        fc.integer({ min: 0, max: 20_000 }),
        fc.option(fc.nat(20_000)),
        (now, createdAt, refreshedAt, closedAt) => {
          const s = { createdAt, refreshedAt, closedAt } as SessionRecord;
          expect(sessionCounted(s, censusBounds(now, POLICY))).toBe(sessionStatus(s, now, POLICY) === 'open');
        },
      ),
    );
  });
  it('an upload session is counted exactly while it is in flight (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...OPEN_STATES, ...TERMINAL_STATES),
        fc.nat(20_000),
        fc.nat(20_000),
        (state, expiresAt, now) => {
          expect(uploadCounted({ state, expiresAt }, censusBounds(now, POLICY))).toBe(
            OPEN_STATES.includes(uploadState({ state, expiresAt }, now)),
          );
        },
      ),
    );
  });
});

async function setup() {
  const ports = createMemoryPorts();
  const clock = new FakeClock();
  const random = new SeededRandom(3);
  const core = await createCoreServices({
    store: ports.accounts,
    clock,
    random,
    hasher: new PlainHasher(),
    logger: new MemoryLogger(),
    policy: POLICY,
    totpStore: ports.totp,
  });
  const quota = new QuotaService({
    ledger: ports.quota,
    blobs: new MemoryBlobStore(),
    clock,
    random,
    policy: DEFAULT_QUOTA_POLICY,
  });
  const operator = new OperatorService({
    census: ports.census,
    accounts: ports.accounts,
    sessions: core.sessions,
    quota,
    totp: ports.totp,
    links: ports.oidc,
    clock,
    policy: POLICY,
  });
  const register = async (address: string) => {
    const r = await core.accounts.register({ address, password: 'correct horse battery' });
    if (!r.ok) throw new Error(r.code);
    return r.value;
  };
  return { ports, clock, core, operator, register };
}

describe('OperatorService', () => {
  it('lock closes every session: the old access token is refused, refresh mints nothing, sign-in is refused', async () => {
    const t = await setup();
    const pair = await t.register('ann@example.org');
    const other = await t.register('bob@example.org');
    const who = await t.core.sessions.authenticate(pair.accessToken);
    if (!who.ok) throw new Error('auth');
    expect(await t.operator.lock(who.value.accountId)).toEqual({ sessionsClosed: 1 });
    expect(await t.core.sessions.authenticate(pair.accessToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
    expect(await t.core.sessions.refresh(pair.sessionToken)).toMatchObject({
      ok: false,
      code: 'error.auth.session_invalid',
    });
    expect(
      await t.core.accounts.login({ address: 'ann@example.org', password: 'correct horse battery', cohortHash: null }),
    ).toMatchObject({ ok: false, code: 'error.auth.account_locked' });
    // Nobody else's sessions end.
    expect((await t.core.sessions.authenticate(other.accessToken)).ok).toBe(true);
    await t.operator.unlock(who.value.accountId);
    expect(
      (await t.core.accounts.login({ address: 'ann@example.org', password: 'correct horse battery', cohortHash: null }))
        .ok,
    ).toBe(true);
  });

  it('revokeSessions ends the sessions and leaves the account able to sign in', async () => {
    const t = await setup();
    const a = await t.register('ann@example.org');
    await t.core.accounts.login({ address: 'ann@example.org', password: 'correct horse battery', cohortHash: null });
    const who = await t.core.sessions.authenticate(a.accessToken);
    if (!who.ok) throw new Error('auth');
    expect((await t.operator.sessions(who.value.accountId)).map((s) => s.method)).toEqual(['password', 'password']);
    expect(await t.operator.revokeSessions(who.value.accountId)).toEqual({ sessionsClosed: 2 });
    expect(await t.operator.sessions(who.value.accountId)).toEqual([]);
    expect(await t.core.sessions.refresh(a.sessionToken)).toMatchObject({ ok: false });
    expect(
      (await t.core.accounts.login({ address: 'ann@example.org', password: 'correct horse battery', cohortHash: null }))
        .ok,
    ).toBe(true);
  });

  it('lists every account with its sessions, last use and quota; the totals agree', async () => {
    const t = await setup();
    await t.register('ann@example.org');
    t.clock.advance(500);
    await t.register('bob@example.org');
    t.clock.advance(100);
    const rows = [];
    for await (const r of t.operator.accounts()) rows.push(r);
    expect(rows.map((r) => [r.address, r.sessionsOpen, r.locked, r.totp, r.quota.state])).toEqual([
      ['ann@example.org', 1, false, false, 'OK'],
      ['bob@example.org', 1, false, false, 'OK'],
    ]);
    // Past the idle expiry, ann's session no longer counts as open anywhere.
    t.clock.advance(600);
    const after = [];
    for await (const r of t.operator.accounts()) after.push(r.sessionsOpen);
    expect(after).toEqual([0, 1]);
    expect(await t.operator.totals()).toMatchObject({
      accounts: 2,
      openSessions: 1,
      usedBytes: 0,
      storedBlobs: 0,
      openUploads: 0,
    });
  });
});
