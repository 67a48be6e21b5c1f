import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { codeForStep, stepAt, type TotpStore } from '@strongroom/core';
import {
  createCoreServices,
  FakeClock,
  MemoryLogger,
  PlainHasher,
  SeededRandom,
  totpSecretBytes,
} from '@strongroom/core/testing';
import { openSqliteDatabase } from './migrate.js';
import { SqliteStore } from './store.js';
import { SqliteTotpStore } from './totp-store.js';

const PASSWORD = 'correct horse battery';
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * Wraps each connection's TotpStore so their enrollment reads wait for each other: the racing
 * requests all read the same highest used step before any writes, so only the store's
 * compare-and-set can pick a winner. Also counts how many requests reached the compare-and-set.
 */
function racing(inners: TotpStore[]): { stores: TotpStore[]; advances: () => number } {
  let waiting: (() => void)[] = [];
  let advances = 0;
  const stores = inners.map((inner) => {
    const store = Object.create(inner) as TotpStore;
    store.findTotpEnrollment = async (accountId) => {
      const row = await inner.findTotpEnrollment(accountId);
      await new Promise<void>((resolve) => {
        waiting.push(resolve);
        if (waiting.length === inners.length) {
          for (const go of waiting) go();
          waiting = [];
        }
      });
      return row;
    };
    store.advanceTotpStep = (accountId, step, at) => {
      advances++;
      return inner.advanceTotpStep(accountId, step, at);
    };
    store.removeTotp = (accountId, step, at) => {
      advances++;
      return inner.removeTotp(accountId, step, at);
    };
    return store;
  });
  return { stores, advances: () => advances };
}

/** Two "server processes": two connections to one database file, each with its own services. */
async function twoServers() {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-totp-'));
  dirs.push(dir);
  const file = join(dir, 'db.sqlite');
  const clock = new FakeClock(Date.parse('2026-11-21T10:00:05.000Z'));
  const open = async (seed: number) => {
    const db = openSqliteDatabase(file);
    const store = new SqliteStore(db);
    const totpStore = new SqliteTotpStore(db);
    const core = await createCoreServices({
      store,
      clock,
      random: new SeededRandom(seed),
      hasher: new PlainHasher(),
      logger: new MemoryLogger(),
      totpStore,
    });
    return { db, store, totpStore, core };
  };
  const a = await open(1);
  const reg = await a.core.accounts.register({ address: 'ada@example.org', password: PASSWORD });
  if (!reg.ok) throw new Error('register');
  const who = await a.core.sessions.authenticate(reg.value.accessToken);
  if (!who.ok) throw new Error('authenticate');
  const enrolled = await a.core.totp.enroll(who.value);
  if (!enrolled.ok) throw new Error('enroll');
  const secret = totpSecretBytes(enrolled.value.secret);
  if (!(await a.core.totp.verifyEnrollment(who.value, codeForStep(secret, stepAt(clock.now())))).ok)
    throw new Error('confirm');
  clock.advance(30_000);
  const b = await open(2);
  const close = () => {
    a.db.close();
    b.db.close();
  };
  /** Both connections' TOTP services, over racing wrappers of their own stores. */
  const racers = async () => {
    const race = racing([a.totpStore, b.totpStore]);
    const services = await Promise.all(
      [a.store, b.store].map(
        async (store, i) =>
          (
            await createCoreServices({
              store,
              clock,
              random: new SeededRandom(10 + i),
              hasher: new PlainHasher(),
              logger: new MemoryLogger(),
              totpStore: race.stores[i]!,
            })
          ).totp,
      ),
    );
    return { ta: services[0]!, tb: services[1]!, advances: race.advances };
  };
  return { a, b, clock, secret, principal: who.value, close, racers };
}

describe('TOTP replay protection against real SQLite (two connections)', () => {
  it('two sign-ins with the same code on two challenges: exactly one opens a session', async () => {
    const env = await twoServers();
    try {
      const challenge = async (core: typeof env.a.core) => {
        const r = await core.accounts.login({ address: 'ada@example.org', password: PASSWORD, cohortHash: null });
        if (!r.ok || r.value.kind !== 'challenge') throw new Error('expected a challenge');
        return r.value.challenge;
      };
      const [ca, cb] = [await challenge(env.a.core), await challenge(env.b.core)];
      const code = codeForStep(env.secret, stepAt(env.clock.now()));
      const before = (await env.a.store.listOpenSessions(env.principal.accountId)).length;
      const { ta, tb, advances } = await env.racers();
      const results = await Promise.all([
        ta.verifyLogin({ challenge: ca, code, cohortHash: null }),
        tb.verifyLogin({ challenge: cb, code, cohortHash: null }),
      ]);
      expect(advances()).toBe(2);
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      expect(results.find((r) => !r.ok)).toMatchObject({ code: 'error.auth.invalid_code', data: { attempts_left: 4 } });
      expect((await env.a.store.listOpenSessions(env.principal.accountId)).length).toBe(before + 1);
      expect((await env.b.totpStore.findTotpEnrollment(env.principal.accountId))?.highestUsedStep).toBe(
        stepAt(env.clock.now()),
      );
    } finally {
      env.close();
    }
  });

  it('two disables with the same live code: exactly one removes the factor', async () => {
    const env = await twoServers();
    try {
      const { ta, tb, advances } = await env.racers();
      const code = codeForStep(env.secret, stepAt(env.clock.now()));
      const results = await Promise.all([ta.disable(env.principal, code), tb.disable(env.principal, code)]);
      expect(advances()).toBe(2);
      expect(results.map((r) => (r.ok ? 'ok' : r.code)).sort()).toEqual(['error.auth.invalid_code', 'ok']);
      expect(await env.a.totpStore.findTotpEnrollment(env.principal.accountId)).toBeNull();
    } finally {
      env.close();
    }
  });
});
