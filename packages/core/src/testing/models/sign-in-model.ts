import fc from 'fast-check';
import type { Ports } from '../../ports/ports.js';
import type { Result } from '../../errors.js';
import { FakeClock } from '../fake-clock.js';
import { PlainHasher } from '../plain-hasher.js';
import { SeededRandom } from '../seeded-random.js';
import { createCoreServices, type CoreServices } from '../services.js';
import { MemoryLogger } from '../silent-logger.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const PASSWORD = 'the right password';
const WRONG = 'a wrong password';
/** Two accounts and an address nobody holds. */
const ADDRESSES = ['ada@example.org', 'bob@example.org', 'nobody@example.org'] as const;
const HELD_BY_ACCOUNT = 2;
const SOURCES = ['4:192.0.2.1', '4:192.0.2.2', '6:20010db800010002'] as const;
/** Small, so runs reach the per-source limit as well as the per-address one. */
const SOURCE_LIMIT = 14;
const SESSION_MAX_MS = 3 * HOUR;

interface ModelTicket {
  value: string;
  account: number;
  wrong: number;
  /** The account's credentials changed (a lock) after it was issued. */
  ended: boolean;
  expiresAt: number;
}
interface Model {
  now: number;
  /** Every wrong password checked per address without a ticket, ever (the spec, not the store). */
  wrongAt: number[][];
  /** Strikes of the current throttled spell per address, and the latest one's time. */
  strikes: number[];
  lastStrikeAt: (number | null)[];
  /** Every failed password sign-in per source, ever. */
  failedAt: number[][];
  tickets: ModelTicket[];
  /** Wrong passwords checked per address with no ticket holding, at the times they were checked (for the bound). */
  checkedWithoutTicket: number[][];
}
interface Real {
  core: CoreServices;
  clock: FakeClock;
  ports: Ports;
  accountIds: string[];
}

function same(actual: unknown, expected: unknown, what: string): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected))
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}
const outcome = (r: Result<unknown>) => (r.ok ? 'ok' : r.code);

/** The rule of spec §3.9 over the complete history: held while ten wrong passwords lie in the last hour, or within the latest strike's delay. */
function specAddressHeld(m: Model, a: number): boolean {
  if (m.wrongAt[a]!.filter((t) => t > m.now - HOUR).length >= 10) return true;
  const last = m.lastStrikeAt[a];
  return (
    m.strikes[a]! > 0 &&
    last !== null &&
    last !== undefined &&
    m.now < last + Math.min(MINUTE * 2 ** (m.strikes[a]! - 1), HOUR)
  );
}
function specSourceRetry(m: Model, s: number): number | null {
  const recent = m.failedAt[s]!.filter((t) => t > m.now - HOUR).sort((x, y) => x - y);
  if (recent.length < SOURCE_LIMIT) return null;
  return Math.max(1, Math.ceil((recent[recent.length - SOURCE_LIMIT]! + HOUR - m.now) / 1000));
}

/** The bound the issue asks for: in no hour are more than ten wrong passwords per address checked without a ticket. */
function checkBound(m: Model): void {
  for (const times of m.checkedWithoutTicket) {
    for (const t of times) {
      const inHour = times.filter((u) => u >= t && u < t + HOUR).length;
      if (inHour > 10) throw new Error(`${inHour} wrong passwords checked without a ticket in the hour from ${t}`);
    }
  }
}

class Login implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly address: number,
    readonly right: boolean,
    readonly source: number,
    /** -1: no ticket; otherwise an index into the tickets handed out (modulo), of any account. */
    readonly ticket: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const t = this.ticket < 0 || m.tickets.length === 0 ? null : m.tickets[this.ticket % m.tickets.length]!;
    const res = await r.core.accounts.login({
      address: ADDRESSES[this.address]!,
      password: this.right ? PASSWORD : WRONG,
      cohortHash: null,
      source: SOURCES[this.source]!,
      signInTicket: t?.value ?? null,
    });
    const rightPassword = this.right && this.address < HELD_BY_ACCOUNT;
    const holds = t !== null && t.account === this.address && !t.ended && t.wrong < 5 && m.now < t.expiresAt;
    if (holds) {
      // Judged by the ticket alone, whatever the address and the source say.
      if (rightPassword) {
        same(outcome(res), 'ok', 'right password with a ticket');
        this.#signedIn(m, res);
      } else {
        same(outcome(res), 'error.auth.invalid_credentials', 'wrong password with a ticket');
        t.wrong++;
      }
    } else if (specAddressHeld(m, this.address)) {
      m.strikes[this.address]!++;
      m.lastStrikeAt[this.address] = m.now;
      same(outcome(res), 'error.auth.throttled', 'login for a held address');
      if (!res.ok)
        same(
          res.data?.['retry_after_s'],
          Math.min(60 * 2 ** (m.strikes[this.address]! - 1), 3600),
          'Retry-After (address)',
        );
    } else if (specSourceRetry(m, this.source) !== null) {
      same(outcome(res), 'error.auth.throttled', 'login from a held source');
      if (!res.ok) same(res.data?.['retry_after_s'], specSourceRetry(m, this.source), 'Retry-After (source)');
    } else {
      m.strikes[this.address] = 0;
      m.lastStrikeAt[this.address] = null;
      if (rightPassword) {
        same(outcome(res), 'ok', 'right password');
        this.#signedIn(m, res);
      } else {
        same(outcome(res), 'error.auth.invalid_credentials', 'wrong password');
        m.wrongAt[this.address]!.push(m.now);
        m.failedAt[this.source]!.push(m.now);
        m.checkedWithoutTicket[this.address]!.push(m.now);
      }
    }
    checkBound(m);
  }
  #signedIn(m: Model, res: Result<unknown>): void {
    const value = (res as { ok: true; value: { kind: string; pair?: { signInTicket?: string } } }).value;
    if (value.kind !== 'session' || typeof value.pair?.signInTicket !== 'string')
      throw new Error('a sign-in without a ticket');
    m.tickets.push({
      value: value.pair.signInTicket,
      account: this.address,
      wrong: 0,
      ended: false,
      expiresAt: m.now + SESSION_MAX_MS,
    });
  }
  toString = () =>
    `Login(${ADDRESSES[this.address]}, ${this.right ? 'right' : 'wrong'}, ${SOURCES[this.source]}, ticket ${this.ticket})`;
}

/** An operator lock (OperatorService.lock: the lock, then closeAll, which voids the tickets) and an unlock. */
class LockAndUnlock implements fc.AsyncCommand<Model, Real> {
  constructor(readonly account: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const id = r.accountIds[this.account]!;
    await r.ports.accounts.setLocked(id, m.now);
    await r.core.sessions.closeAll(id);
    await r.ports.accounts.setLocked(id, null);
    for (const t of m.tickets) if (t.account === this.account) t.ended = true;
  }
  toString = () => `LockAndUnlock(${this.account})`;
}

class AdvanceClock implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.advance(this.ms);
  }
  toString = () => `AdvanceClock(${this.ms})`;
}

/**
 * Password guessing as a model-based property (spec §3.9 to §3.11):
 * logins with right and wrong passwords for two accounts and an unknown address, from three
 * client addresses, with no ticket or any ticket handed out so far (another account's included),
 * operator locks, and clock advances from seconds to hours, against the real services over the
 * given port set. After every step: each login is refused or judged exactly as the rule over the
 * whole history says, with the exact Retry-After; a ticket that holds is never refused for the
 * address's or the source's count; and no hour sees more than ten wrong passwords per address
 * checked without a ticket.
 */
export function signInThrottleModelProperty(
  makePorts: () => Promise<Ports>,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<Model, Real>>, number]> {
  const login = fc
    .tuple(
      fc.nat(ADDRESSES.length - 1),
      fc.boolean(),
      fc.nat(SOURCES.length - 1),
      fc.oneof(fc.constant(-1), fc.nat(20)),
    )
    .map(([a, right, s, t]) => new Login(a, right, s, t));
  const wrongBurst = fc
    .tuple(fc.nat(ADDRESSES.length - 1), fc.nat(SOURCES.length - 1))
    .map(([a, s]) => new Login(a, false, s, -1));
  const commands = [
    login,
    login,
    wrongBurst,
    wrongBurst,
    wrongBurst,
    fc.nat(HELD_BY_ACCOUNT - 1).map((a) => new LockAndUnlock(a)),
    fc
      .oneof(
        fc.integer({ min: 1, max: 40_000 }),
        fc.integer({ min: 50_000, max: 5 * MINUTE }),
        fc.integer({ min: 20 * MINUTE, max: 2 * HOUR }),
      )
      .map((ms) => new AdvanceClock(ms)),
  ];
  return fc.asyncProperty(
    fc.commands(commands, { maxCommands: 200, size: 'max' }),
    fc.nat(1_000_000),
    async (cmds, seed) => {
      const clock = new FakeClock(Date.parse('2026-12-07T10:00:00.000Z') + seed);
      const ports = await makePorts();
      const core = await createCoreServices({
        store: ports.accounts,
        totpStore: ports.totp,
        throttle: ports.secondFactor,
        signIn: ports.signIn,
        sourceFailureLimit: SOURCE_LIMIT,
        clock,
        random: new SeededRandom(seed),
        hasher: new PlainHasher(),
        logger: new MemoryLogger(),
        policy: { idleMs: SESSION_MAX_MS, maxMs: SESSION_MAX_MS, touchIntervalMs: MINUTE, reauthWindowMs: 5 * MINUTE },
      });
      const accountIds: string[] = [];
      const tickets: ModelTicket[] = [];
      for (let a = 0; a < HELD_BY_ACCOUNT; a++) {
        const reg = await core.accounts.register({ address: ADDRESSES[a]!, password: PASSWORD });
        if (!reg.ok || reg.value.signInTicket === undefined) throw new Error('register');
        const who = await core.sessions.authenticate(reg.value.accessToken);
        if (!who.ok) throw new Error('authenticate');
        accountIds.push(who.value.accountId);
        tickets.push({
          value: reg.value.signInTicket,
          account: a,
          wrong: 0,
          ended: false,
          expiresAt: clock.now() + SESSION_MAX_MS,
        });
      }
      const model: Model = {
        now: clock.now(),
        wrongAt: ADDRESSES.map(() => []),
        strikes: ADDRESSES.map(() => 0),
        lastStrikeAt: ADDRESSES.map(() => null),
        failedAt: SOURCES.map(() => []),
        tickets,
        checkedWithoutTicket: ADDRESSES.map(() => []),
      };
      await fc.asyncModelRun(() => ({ model, real: { core, clock, ports, accountIds } }), cmds);
    },
  );
}
