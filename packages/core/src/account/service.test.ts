import { describe, expect, it } from 'vitest';
import type { PasswordHasher } from '../ports/password-hasher.js';
import type { Principal } from '../session/service.js';
import { BoundedHasher } from './hash-queue.js';
import {
  breakable,
  createCoreServices,
  FakeClock,
  MemoryLogger,
  MemoryStore,
  PlainHasher,
  SeededRandom,
} from '../testing/index.js';

class CountingHasher implements PasswordHasher {
  verifies = 0;
  readonly #inner = new PlainHasher();
  hash(p: string) {
    return this.#inner.hash(p);
  }
  verify(h: string, p: string) {
    this.verifies++;
    return this.#inner.verify(h, p);
  }
}

describe('AccountService', () => {
  it('spends one password verification for an unknown address, as for a known one', async () => {
    const hasher = new CountingHasher();
    const core = await createCoreServices({
      store: new MemoryStore(),
      clock: new FakeClock(),
      random: new SeededRandom(),
      hasher,
      logger: new MemoryLogger(),
    });
    await core.accounts.register({ address: 'ada@example.org', password: 'correct horse battery' });
    const known = await core.accounts.login({
      address: 'ada@example.org',
      password: 'wrong wrong wrong',
      cohortHash: null,
    });
    expect(hasher.verifies).toBe(1);
    const unknown = await core.accounts.login({
      address: 'nobody@example.org',
      password: 'wrong wrong wrong',
      cohortHash: null,
    });
    expect(hasher.verifies).toBe(2);
    const malformed = await core.accounts.login({
      address: 'not an address',
      password: 'wrong wrong wrong',
      cohortHash: null,
    });
    expect(hasher.verifies).toBe(3);
    expect(unknown).toEqual(known);
    expect(malformed).toEqual(known);
  });
  it('passwords: at most 1,024 code points to register or change to; longer ones at sign-in are wrong without hashing', async () => {
    const hasher = new CountingHasher();
    const core = await createCoreServices({
      store: new MemoryStore(),
      clock: new FakeClock(),
      random: new SeededRandom(),
      hasher,
      logger: new MemoryLogger(),
    });
    // Code points, not UTF-16 units: 1,024 astral characters are 2,048 units and still allowed.
    const longest = '😀'.repeat(1024);
    expect(
      (await core.accounts.register({ address: 'long@example.org', password: `${longest}x` })).ok ? 'ok' : 'refused',
    ).toBe('refused');
    expect(await core.accounts.register({ address: 'long@example.org', password: 'x'.repeat(1025) })).toMatchObject({
      ok: false,
      code: 'error.auth.weak_password',
    });
    const pair = await core.accounts.register({ address: 'long@example.org', password: longest });
    if (!pair.ok) throw new Error('register failed');
    const who = await core.sessions.authenticate(pair.value.accessToken);
    if (!who.ok) throw new Error('authenticate failed');
    expect(
      await core.accounts.changePassword(who.value, { currentPassword: longest, newPassword: 'y'.repeat(1025) }),
    ).toMatchObject({ ok: false, code: 'error.auth.weak_password' });
    const before = hasher.verifies;
    expect(
      await core.accounts.login({ address: 'long@example.org', password: `${longest}x`, cohortHash: null }),
    ).toMatchObject({ ok: false, code: 'error.auth.invalid_credentials' });
    expect(
      await core.accounts.login({ address: 'nobody@example.org', password: 'z'.repeat(60_000), cohortHash: null }),
    ).toMatchObject({ ok: false, code: 'error.auth.invalid_credentials' });
    expect(await core.accounts.reauthenticate(who.value, `${longest}x`)).toMatchObject({
      ok: false,
      code: 'error.auth.invalid_credentials',
    });
    expect(hasher.verifies).toBe(before);
    expect(
      await core.accounts.login({ address: 'long@example.org', password: longest, cohortHash: null }),
    ).toMatchObject({ ok: true });
    expect(hasher.verifies).toBe(before + 1);
  });
  it('registration follows SVC_REGISTRATION: closed refuses before hashing or writing; allowlist admits listed addresses and domains', async () => {
    class CountingHashes extends CountingHasher {
      hashes = 0;
      override hash(p: string) {
        this.hashes++;
        return super.hash(p);
      }
    }
    const hasher = new CountingHashes();
    const store = new MemoryStore();
    const closed = await createCoreServices({
      store,
      clock: new FakeClock(),
      random: new SeededRandom(),
      hasher,
      logger: new MemoryLogger(),
      registration: { mode: 'closed' },
    });
    expect(
      await closed.accounts.register({ address: 'ada@example.org', password: 'correct horse battery' }),
    ).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });
    expect(await closed.accounts.register({ address: 'not an address', password: 'short' })).toMatchObject({
      ok: false,
      code: 'error.auth.registration_closed',
    });
    expect(hasher.hashes).toBe(0);
    expect(store.accounts.size).toBe(0);

    const listed = await createCoreServices({
      store,
      clock: new FakeClock(),
      random: new SeededRandom(),
      hasher,
      logger: new MemoryLogger(),
      registration: { mode: 'allowlist' },
    });
    expect(
      await listed.accounts.register({ address: 'ada@example.org', password: 'correct horse battery' }),
    ).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });
    expect(await listed.registration.allow('ADA@example.org')).toEqual({
      ok: true,
      value: { entry: 'ada@example.org', added: true },
    });
    expect(await listed.registration.allow('ada@example.org')).toEqual({
      ok: true,
      value: { entry: 'ada@example.org', added: false },
    });
    expect((await listed.accounts.register({ address: 'Ada@Example.org', password: 'correct horse battery' })).ok).toBe(
      true,
    );
    expect(
      await listed.accounts.register({ address: 'bob@example.org', password: 'correct horse battery' }),
    ).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });
    expect((await listed.registration.allow('@example.org')).ok).toBe(true);
    expect((await listed.accounts.register({ address: 'bob@example.org', password: 'correct horse battery' })).ok).toBe(
      true,
    );
    expect(await listed.registration.disallow('@Example.org')).toEqual({
      ok: true,
      value: { entry: '@example.org', removed: true },
    });
    expect(
      await listed.accounts.register({ address: 'cy@example.org', password: 'correct horse battery' }),
    ).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });
    expect(store.accounts.size).toBe(2);
    expect((await listed.registration.list()).map((e) => e.entry)).toEqual(['ada@example.org']);
  });

  it('a login gate that asks for a challenge opens no session', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    const base = await createCoreServices({
      store,
      clock,
      random: new SeededRandom(),
      hasher: new PlainHasher(),
      logger: new MemoryLogger(),
    });
    await base.accounts.register({ address: 'ada@example.org', password: 'correct horse battery' });
    const { AccountService } = await import('./service.js');
    const gated = new AccountService({
      accounts: store,
      sessions: base.sessions,
      hasher: new PlainHasher(),
      clock,
      random: new SeededRandom(2),
      loginGate: {
        afterPassword: async (a) => ({ kind: 'challenge', challenge: 'c', expiresIn: 300, accountId: a.id }),
      },
      registration: base.registration,
    });
    const before = store.sessions.size;
    expect(
      await gated.login({ address: 'ada@example.org', password: 'correct horse battery', cohortHash: 'a'.repeat(64) }),
    ).toEqual({
      ok: true,
      value: { kind: 'challenge', challenge: 'c', expiresIn: 300, accountId: expect.any(String) },
    });
    expect(store.sessions.size).toBe(before);
    expect(store.cohorts.size).toBe(0);
  });
  it('the profile comes from the account read with the session: one read per request, and still current', async () => {
    const store = breakable(new MemoryStore());
    const core = await createCoreServices({
      store: store.port,
      clock: new FakeClock(),
      random: new SeededRandom(),
      hasher: new PlainHasher(),
      logger: new MemoryLogger(),
    });
    const pair = await core.accounts.register({ address: 'Ada@Example.org', password: 'correct horse battery' });
    if (!pair.ok) throw new Error('register failed');
    const updated = await core.accounts.updateProfile(
      ((await core.sessions.authenticate(pair.value.accessToken)) as { value: Principal }).value,
      { displayName: 'Ada L.' },
    );
    expect(updated.ok).toBe(true);
    // The name set a moment ago is what the next request's authentication reads.
    const who = await core.sessions.authenticate(pair.value.accessToken);
    if (!who.ok) throw new Error('authenticate failed');
    store.break();
    // No store call is left to make: the profile is answered from the principal.
    expect(await core.accounts.profile(who.value)).toMatchObject({
      ok: true,
      value: { address: 'Ada@Example.org', displayName: 'Ada L.' },
    });
    // A principal built by hand (no account on it) is read from the store, which is down.
    await expect(
      core.accounts.profile({ accountId: who.value.accountId, sessionId: who.value.sessionId }),
    ).rejects.toMatchObject({ code: 'error.store.unavailable' });
    store.mend();
    expect(
      await core.accounts.profile({ accountId: who.value.accountId, sessionId: who.value.sessionId }),
    ).toMatchObject({ ok: true, value: { displayName: 'Ada L.' } });
  });
  it('a sign-in the hasher has no room for is refused before the account is read (register, login, reauthenticate, password change)', async () => {
    // One check runs, none may wait: while the first login's verification is held, every other is past the bound.
    const held: (() => void)[] = [];
    let holding = false;
    const inner = new PlainHasher();
    const slow: PasswordHasher = {
      hash: (p) => inner.hash(p),
      verify: async (h, p) => {
        if (holding) await new Promise<void>((go) => held.push(go));
        return inner.verify(h, p);
      },
    };
    const store = new MemoryStore();
    const reads = { byAddress: 0, byId: 0 };
    const counted = new Proxy(store, {
      get(target, key, receiver) {
        if (key === 'findAccountByAddress') reads.byAddress++;
        if (key === 'findAccountById') reads.byId++;
        const v = Reflect.get(target, key, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const hasher = new BoundedHasher(slow, { running: 1, waiting: 0 });
    const core = await createCoreServices({
      store: counted,
      clock: new FakeClock(),
      random: new SeededRandom(),
      hasher,
      logger: new MemoryLogger(),
    });
    const pair = await core.accounts.register({ address: 'ada@example.org', password: 'correct horse battery' });
    if (!pair.ok) throw new Error('register failed');
    const who = await core.sessions.authenticate(pair.value.accessToken);
    if (!who.ok) throw new Error('authenticate failed');
    holding = true;
    const first = core.accounts.login({
      address: 'ada@example.org',
      password: 'correct horse battery',
      cohortHash: null,
    });
    for (let i = 0; i < 100 && held.length === 0; i++) await new Promise((r) => setImmediate(r));
    expect(hasher.load.running).toBe(1);
    const before = { ...reads };
    const busy = { code: 'error.server.busy' };
    await expect(
      core.accounts.login({ address: 'ada@example.org', password: 'correct horse battery', cohortHash: null }),
    ).rejects.toMatchObject(busy);
    await expect(
      core.accounts.register({ address: 'bob@example.org', password: 'correct horse battery' }),
    ).rejects.toMatchObject(busy);
    await expect(core.accounts.reauthenticate(who.value, 'correct horse battery')).rejects.toMatchObject(busy);
    await expect(
      core.accounts.changePassword(who.value, {
        currentPassword: 'correct horse battery',
        newPassword: 'another long password',
      }),
    ).rejects.toMatchObject(busy);
    expect(reads).toEqual(before);
    holding = false;
    for (const go of held.splice(0)) go();
    expect(await first).toMatchObject({ ok: true });
    // With room again, a sign-in reads the account as before.
    expect(
      await core.accounts.login({ address: 'ada@example.org', password: 'correct horse battery', cohortHash: null }),
    ).toMatchObject({ ok: true });
    expect(reads.byAddress).toBeGreaterThan(before.byAddress);
  });
});
