import fc from 'fast-check';
import type { AccountStore } from '../../ports/account-store.js';
import type { CohortMap } from '../../ports/cohort-map.js';
import type { SessionLedger } from '../../ports/session-ledger.js';
import type { SigningKeyStore } from '../../ports/signing-key-store.js';
import type { SessionPolicy } from '../../session/machine.js';
import { FakeClock } from '../fake-clock.js';
import { PlainHasher } from '../plain-hasher.js';
import { SeededRandom } from '../seeded-random.js';
import { createCoreServices, type CoreServices } from '../services.js';
import { MemoryLogger } from '../silent-logger.js';

function expect(actual: unknown, what = 'value') {
  return {
    toBe(expected: unknown): void {
      if (actual !== expected) throw new Error(`${what}: expected ${String(expected)}, got ${String(actual)}`);
    },
  };
}

// Short lifetimes so random clock advances cross every boundary.
const POLICY: SessionPolicy = {
  idleMs: 40 * 60_000,
  maxMs: 100 * 60_000,
  touchIntervalMs: 60_000,
  reauthWindowMs: 300_000,
};
const ACCESS_TTL = 15 * 60_000;
const ACCOUNTS = ['a@example.org', 'b@example.org'];

interface ModelSession {
  account: number;
  createdAt: number;
  refreshedAt: number;
  closed: boolean;
  token: string;
  staleTokens: string[];
}
interface ModelAccess {
  session: number;
  issuedAt: number;
  token: string;
}
interface Model {
  now: number;
  passwords: string[];
  sessions: ModelSession[];
  access: ModelAccess[];
  floors: Map<number, number>;
}
interface Real {
  core: CoreServices;
  clock: FakeClock;
  ids: string[];
  accountIds: string[];
}

const live = (m: Model, i: number): boolean => {
  const s = m.sessions[i]!;
  return !s.closed && m.now < s.createdAt + POLICY.maxMs && m.now < s.refreshedAt + POLICY.idleMs;
};
/** A token's `exp` is a whole second (JWT NumericDate): 15 minutes after its `iat`, rounded down. */
const accessExpiry = (issuedAt: number): number => Math.floor(issuedAt / 1000) * 1000 + ACCESS_TTL;
const accessOk = (m: Model, a: ModelAccess): boolean => {
  const s = m.sessions[a.session]!;
  return !s.closed && m.now < accessExpiry(a.issuedAt) && a.issuedAt >= (m.floors.get(a.session) ?? 0);
};

/** After every command: every token the model knows behaves as the model says. */
async function checkAll(m: Model, r: Real): Promise<void> {
  for (const a of m.access) {
    const got = await r.core.sessions.authenticate(a.token);
    expect(got.ok, `access token of session ${a.session}`).toBe(accessOk(m, a));
  }
}

class Open implements fc.AsyncCommand<Model, Real> {
  constructor(readonly account: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const res = await r.core.accounts.login({
      address: ACCOUNTS[this.account]!,
      password: m.passwords[this.account]!,
      cohortHash: null,
    });
    if (!res.ok || res.value.kind !== 'session') throw new Error('login failed');
    m.sessions.push({
      account: this.account,
      createdAt: m.now,
      refreshedAt: m.now,
      closed: false,
      token: res.value.pair.sessionToken,
      staleTokens: [],
    });
    m.access.push({ session: m.sessions.length - 1, issuedAt: m.now, token: res.value.pair.accessToken });
    r.ids.push(res.value.pair.sessionId);
    await checkAll(m, r);
  }
  toString = () => `Open(${this.account})`;
}

class Issue implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.sessions.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const i = this.pick % m.sessions.length;
    const s = m.sessions[i]!;
    const expected = live(m, i);
    const res = await r.core.sessions.refresh(s.token);
    expect(res.ok).toBe(expected);
    for (const stale of s.staleTokens) expect((await r.core.sessions.refresh(stale)).ok).toBe(false);
    if (res.ok) {
      // Never before the session's access floor (a password change may set it a millisecond ahead).
      const at = Math.max(m.now, m.floors.get(i) ?? 0);
      s.refreshedAt = at;
      m.access.push({ session: i, issuedAt: at, token: res.value.accessToken });
    }
    await checkAll(m, r);
  }
  toString = () => `Issue(${this.pick})`;
}

class Revoke implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly by: number,
  ) {}
  check = (m: Readonly<Model>) => m.sessions.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const i = this.pick % m.sessions.length;
    const s = m.sessions[i]!;
    const res = await r.core.sessions.revoke({ accountId: r.accountIds[s.account]!, sessionId: 'whoever' }, r.ids[i]!);
    expect(res.ok).toBe(!s.closed);
    s.closed = true;
    await checkAll(m, r);
  }
  toString = () => `Revoke(${this.pick})`;
}

class CloseAll implements fc.AsyncCommand<Model, Real> {
  constructor(readonly account: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const open = m.sessions.filter((s) => s.account === this.account && !s.closed);
    expect(await r.core.sessions.closeAll(r.accountIds[this.account]!)).toBe(open.length);
    for (const s of open) s.closed = true;
    await checkAll(m, r);
  }
  toString = () => `CloseAll(${this.account})`;
}

class ChangePassword implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly suffix: number,
  ) {}
  check = (m: Readonly<Model>) => m.sessions.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const i = this.pick % m.sessions.length;
    const s = m.sessions[i]!;
    const next = `new password number ${this.suffix}`;
    const res = await r.core.accounts.changePassword(
      { accountId: r.accountIds[s.account]!, sessionId: r.ids[i]! },
      { currentPassword: m.passwords[s.account]!, newPassword: next },
    );
    // Its answer is an access-token issuance: the caller's session must be open and unexpired.
    expect(res.ok).toBe(live(m, i));
    if (res.ok) {
      m.passwords[s.account] = next;
      m.sessions.forEach((o, j) => {
        if (o.account === s.account && j !== i) o.closed = true;
      });
      s.staleTokens.push(s.token);
      s.token = res.value.sessionToken;
      // Past every token issued to the session so far, a refresh in this very millisecond included.
      const floor = Math.max(m.now, s.refreshedAt + 1);
      m.floors.set(i, floor);
      // The issuance restarts the idle clock, as a refresh does.
      s.refreshedAt = floor;
      m.access.push({ session: i, issuedAt: floor, token: res.value.accessToken });
    }
    await checkAll(m, r);
  }
  toString = () => `ChangePassword(${this.pick})`;
}

class AdvanceClock implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.advance(this.ms);
    await checkAll(m, r);
  }
  toString = () => `AdvanceClock(${this.ms})`;
}

type Store = AccountStore & SessionLedger & CohortMap & SigningKeyStore;

/**
 * The session lifecycle as a model-based property: random sequences of open, issue, revoke,
 * close-all, password change and clock advances, run against the real services over the store
 * `makeStore` returns, and checked against a plain model after every step. Core runs it over the
 * in-memory store; each adapter runs it over its own.
 */
export function sessionModelProperty(
  makeStore: () => Promise<Store>,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<Model, Real>>]> {
  const commands = [
    fc.integer({ min: 0, max: 1 }).map((a) => new Open(a)),
    fc.nat(20).map((p) => new Issue(p)),
    fc.tuple(fc.nat(20), fc.nat(1)).map(([p, b]) => new Revoke(p, b)),
    fc.integer({ min: 0, max: 1 }).map((a) => new CloseAll(a)),
    fc.tuple(fc.nat(20), fc.nat(1000)).map(([p, s]) => new ChangePassword(p, s)),
    fc
      .oneof(fc.integer({ min: 1, max: 120_000 }), fc.integer({ min: 5 * 60_000, max: 45 * 60_000 }))
      .map((ms) => new AdvanceClock(ms)),
  ];
  return fc.asyncProperty(fc.commands(commands, { maxCommands: 40 }), async (cmds) => {
    const clock = new FakeClock();
    const core = await createCoreServices({
      store: await makeStore(),
      clock,
      random: new SeededRandom(3),
      hasher: new PlainHasher(),
      logger: new MemoryLogger(),
      policy: POLICY,
    });
    const accountIds: string[] = [];
    for (const address of ACCOUNTS) {
      const r = await core.accounts.register({ address, password: 'initial password' });
      if (!r.ok) throw new Error('register');
      const who = await core.sessions.authenticate(r.value.accessToken);
      if (!who.ok) throw new Error('auth');
      accountIds.push(who.value.accountId);
      await core.sessions.closeAll(who.value.accountId);
    }
    // Each step lands on a later millisecond than setup, so "issued before the change" is unambiguous.
    clock.advance(1);
    const model: Model = {
      now: clock.now(),
      passwords: ['initial password', 'initial password'],
      sessions: [],
      access: [],
      floors: new Map(),
    };
    await fc.asyncModelRun(() => ({ model, real: { core, clock, ids: [], accountIds } }), cmds);
  });
}
