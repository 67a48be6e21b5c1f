import fc from 'fast-check';
import { Secret } from 'otpauth';
import type { Ports } from '../../ports/ports.js';
import type { Result } from '../../errors.js';
import { codeForStep } from '../../totp/machine.js';
import { recordWrongCode, throttleDecision } from '../../second-factor/throttle.js';
import { FakeClock } from '../fake-clock.js';
import { PlainHasher } from '../plain-hasher.js';
import { SeededRandom } from '../seeded-random.js';
import { createCoreServices, type CoreServices } from '../services.js';
import { MemoryLogger } from '../silent-logger.js';

const ADDRESS = 'throttle@example.org';
const PASSWORD = 'throttle password 1';
const STEP_MS = 30_000;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

function same(actual: unknown, expected: unknown, what: string): void {
  if (actual !== expected) throw new Error(`${what}: expected ${String(expected)}, got ${String(actual)}`);
}
function outcome(res: Result<unknown>): string {
  return res.ok ? 'ok' : res.code;
}

interface ModelChallenge {
  token: string;
  expiresAt: number;
  counted: number;
  used: boolean;
}
interface Model {
  now: number;
  secret: Uint8Array;
  highest: number;
  /** Every wrong code the system was shown and checked, ever (no pruning: the spec, not the store). */
  wrongAt: number[];
  challenges: ModelChallenge[];
}
interface Real {
  core: CoreServices;
  clock: FakeClock;
  ports: Ports;
  accountId: string;
}

/**
 * The rule as spec §5.6 words it, over the complete history: the wrong codes in the hour
 * ending at the latest; ten or more hold the account for a minute after the latest, doubling per
 * further one, at most an hour.
 */
function specHeldUntil(wrongAt: readonly number[]): number | null {
  if (wrongAt.length === 0) return null;
  const latest = Math.max(...wrongAt);
  const n = wrongAt.filter((t) => t > latest - HOUR).length;
  if (n < 10) return null;
  let delay = MINUTE;
  for (let i = 10; i < n && delay < HOUR; i++) delay *= 2;
  return latest + Math.min(delay, HOUR);
}

function modelStep(m: Model, code: string): number | null {
  const cur = Math.floor(m.now / STEP_MS);
  for (let step = cur - 1; step <= cur + 1; step++) {
    if (step <= m.highest) continue;
    if (codeForStep(m.secret, step) === code) return step;
  }
  return null;
}

async function checkInvariants(m: Model, r: Real): Promise<void> {
  // The stored record decides as the rule folded over the wrong codes would, now and after any
  // further wrong codes, whatever the store pruned. (Every check is counted before its compare and a
  // right code gives its place back, which may drop times that can no longer change a decision.)
  let folded: ReturnType<typeof recordWrongCode> | null = null;
  for (const t of m.wrongAt) folded = recordWrongCode(folded, t);
  const stored = await r.ports.secondFactor.findTotpThrottle(r.accountId);
  let s = stored;
  let f = folded;
  for (const later of [0, 1, MINUTE, 10 * MINUTE, HOUR - 1, HOUR, 2 * HOUR]) {
    same(
      JSON.stringify(throttleDecision(s, m.now + later)),
      JSON.stringify(throttleDecision(f, m.now + later)),
      `the hold ${later} ms on, after further wrong codes`,
    );
    s = recordWrongCode(s, m.now + later);
    f = recordWrongCode(f, m.now + later);
  }
  // The bound itself: no hour ever sees more than 10 + 6 wrong codes checked (1+2+4+8+16+32 minutes > 1 h).
  for (const t of m.wrongAt) {
    const inHour = m.wrongAt.filter((u) => u >= t && u < t + HOUR).length;
    same(inHour <= 16, true, `wrong codes checked in the hour from ${t} (${inHour})`);
  }
}

class Login implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const res = await r.core.accounts.login({ address: ADDRESS, password: PASSWORD, cohortHash: null });
    const until = specHeldUntil(m.wrongAt);
    if (until !== null && m.now < until) {
      same(outcome(res), 'error.auth.throttled', 'login while held');
      if (!res.ok) same(res.data?.['retry_after_s'], Math.ceil((until - m.now) / 1000), 'Retry-After');
    } else {
      if (!res.ok || res.value.kind !== 'challenge')
        throw new Error(`login: expected a challenge, got ${JSON.stringify(res)}`);
      m.challenges.push({ token: res.value.challenge, expiresAt: m.now + 300_000, counted: 0, used: false });
    }
    await checkInvariants(m, r);
  }
  toString = () => 'Login';
}

class WrongPassword implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    same(
      outcome(await r.core.accounts.login({ address: ADDRESS, password: 'not the password', cohortHash: null })),
      'error.auth.invalid_credentials',
      'wrong password',
    );
    await checkInvariants(m, r);
  }
  toString = () => 'WrongPassword';
}

class Verify implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly right: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.challenges.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const n = m.challenges.length;
    const c = m.challenges[this.pick < 0 ? Math.max(0, n + this.pick) : this.pick % n]!;
    const cur = Math.floor(m.now / STEP_MS);
    const near = new Set([-1, 0, 1].map((d) => codeForStep(m.secret, cur + d)));
    const code = this.right
      ? codeForStep(m.secret, cur)
      : ['000000', '111111', '222222', '333333'].find((x) => !near.has(x))!;
    const res = await r.core.totp.verifyLogin({ challenge: c.token, code, cohortHash: null });
    const until = specHeldUntil(m.wrongAt);
    if (c.used || m.now >= c.expiresAt) same(outcome(res), 'error.auth.challenge_invalid', 'dead challenge');
    else if (++c.counted > 5) same(outcome(res), 'error.auth.challenge_exhausted', 'sixth attempt');
    else if (until !== null && m.now < until) {
      same(outcome(res), 'error.auth.throttled', 'code while held');
      if (!res.ok) same(res.data?.['retry_after_s'], Math.ceil((until - m.now) / 1000), 'Retry-After');
    } else {
      const step = modelStep(m, code);
      if (step === null) {
        same(outcome(res), 'error.auth.invalid_code', 'wrong code');
        m.wrongAt.push(m.now);
      } else {
        same(outcome(res), 'ok', 'right code');
        m.highest = step;
        c.used = true;
      }
    }
    await checkInvariants(m, r);
  }
  toString = () => `Verify(${this.pick}, ${this.right ? 'right' : 'wrong'})`;
}

class AdvanceClock implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.advance(this.ms);
    await checkInvariants(m, r);
  }
  toString = () => `AdvanceClock(${this.ms})`;
}

/** Moves the clock to just before, exactly at, or just after the end of the hold, so runs climb the doubling ladder. */
class WaitOutHold implements fc.AsyncCommand<Model, Real> {
  constructor(readonly delta: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const until = specHeldUntil(m.wrongAt);
    const ms = until !== null && until > m.now ? Math.max(1, until - m.now + this.delta) : 1;
    m.now += ms;
    r.clock.advance(ms);
    await checkInvariants(m, r);
  }
  toString = () => `WaitOutHold(${this.delta})`;
}

/**
 * The per-account second-factor throttle as a model-based property: sign-ins (right and wrong
 * passwords), right and wrong codes on old and new challenges, and clock advances from seconds to
 * hours, against the real services over the given port set. After every step: login and code
 * checks are held exactly when the rule of spec §5.6 (computed over the full history) says so, with
 * the exact Retry-After; the stored record equals core's rule folded over every wrong code; no
 * hour ever sees more than sixteen wrong codes checked; wrong passwords change nothing.
 */
export function totpThrottleModelProperty(
  makePorts: () => Promise<Ports>,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<Model, Real>>, number]> {
  const commands = [
    fc.constant(new Login()),
    fc.constant(new Login()),
    fc.constant(new WrongPassword()),
    fc.tuple(fc.nat(1), fc.constant(false)).map(([p]) => new Verify(-1 - p, false)),
    fc.tuple(fc.nat(1), fc.constant(false)).map(([p]) => new Verify(-1 - p, false)),
    fc.tuple(fc.nat(1), fc.constant(false)).map(([p]) => new Verify(-1 - p, false)),
    fc.tuple(fc.nat(10), fc.boolean()).map(([p, right]) => new Verify(p, right)),
    fc
      .oneof(
        fc.integer({ min: 1, max: 40_000 }),
        fc.integer({ min: 50_000, max: 5 * MINUTE }),
        fc.integer({ min: 20 * MINUTE, max: 2 * HOUR }),
      )
      .map((ms) => new AdvanceClock(ms)),
    fc.constantFrom(-1000, -1, 0, 1, 45_000).map((d) => new WaitOutHold(d)),
    fc.constantFrom(0, 1).map((d) => new WaitOutHold(d)),
  ];
  return fc.asyncProperty(
    fc.commands(commands, { maxCommands: 150, size: 'max' }),
    fc.integer({ min: 0, max: STEP_MS - 1 }),
    async (cmds, offset) => {
      const clock = new FakeClock(Date.parse('2026-11-21T10:00:00.000Z') + offset);
      const ports = await makePorts();
      const core = await createCoreServices({
        store: ports.accounts,
        totpStore: ports.totp,
        throttle: ports.secondFactor,
        clock,
        random: new SeededRandom(offset),
        hasher: new PlainHasher(),
        logger: new MemoryLogger(),
      });
      const reg = await core.accounts.register({ address: ADDRESS, password: PASSWORD });
      if (!reg.ok) throw new Error('register');
      const who = await core.sessions.authenticate(reg.value.accessToken);
      if (!who.ok) throw new Error('authenticate');
      const enrolled = await core.totp.enroll(who.value);
      if (!enrolled.ok) throw new Error('enroll');
      const secret = Secret.fromBase32(enrolled.value.secret).bytes;
      const step = Math.floor(clock.now() / STEP_MS);
      const confirmed = await core.totp.verifyEnrollment(who.value, codeForStep(secret, step));
      if (!confirmed.ok) throw new Error('verify enrollment');
      clock.advance(STEP_MS);
      const model: Model = { now: clock.now(), secret, highest: step, wrongAt: [], challenges: [] };
      await fc.asyncModelRun(() => ({ model, real: { core, clock, ports, accountId: who.value.accountId } }), cmds);
    },
  );
}
