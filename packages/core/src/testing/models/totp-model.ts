import fc from 'fast-check';
import { Secret } from 'otpauth';
import type { AccountStore } from '../../ports/account-store.js';
import type { CohortMap } from '../../ports/cohort-map.js';
import type { SessionLedger } from '../../ports/session-ledger.js';
import type { SigningKeyStore } from '../../ports/signing-key-store.js';
import type { TotpStore } from '../../ports/totp-store.js';
import type { Result } from '../../errors.js';
import type { Principal } from '../../session/service.js';
import { codeForStep } from '../../totp/machine.js';
import { FakeClock } from '../fake-clock.js';
import { PlainHasher } from '../plain-hasher.js';
import { SeededRandom } from '../seeded-random.js';
import { createCoreServices, type CoreServices } from '../services.js';
import { MemoryLogger } from '../silent-logger.js';

type Store = AccountStore & SessionLedger & CohortMap & SigningKeyStore;

const ADDRESS = 'model@example.org';
const PASSWORD = 'model password 1';
const STEP_MS = 30_000;

// Plain assertions: core's testing code does not depend on a test runner.
function same(actual: unknown, expected: unknown, what: string): void {
  if (actual !== expected) throw new Error(`${what}: expected ${String(expected)}, got ${String(actual)}`);
}
function refused(res: Result<unknown>, code: string, attemptsLeft?: number): void {
  same(res.ok ? 'ok' : res.code, code, 'outcome');
  if (attemptsLeft !== undefined && !res.ok) same(res.data?.['attempts_left'], attemptsLeft, 'attempts_left');
}

/** Which code a command presents, relative to the model's clock. */
type CodeKind = 'current' | 'previous' | 'next' | 'stale' | 'future' | 'replay' | 'wrong';
const CODE_KINDS: CodeKind[] = ['current', 'previous', 'next', 'stale', 'future', 'replay', 'wrong'];

interface ModelChallenge {
  token: string;
  expiresAt: number;
  counted: number;
  /** Code checks the service really made (a refusal for a wrong code, or a success). */
  checks: number;
  used: boolean;
}
interface Model {
  now: number;
  phase: 'none' | 'pending' | 'confirmed';
  secret: Uint8Array | null;
  /** Enrollment generation: a fresh secret starts a new replay ledger. */
  generation: number;
  highest: number | null;
  lastAccepted: number | null;
  /** Every (generation, step) the real system ever accepted. */
  accepted: Set<string>;
  challenges: ModelChallenge[];
  sessions: number;
  /** When the principal's session last proved a credential (register, reauthenticate). */
  provedAt: number;
}
interface Real {
  core: CoreServices;
  clock: FakeClock;
  store: Store;
  totpStore: TotpStore;
  principal: Principal;
}

const stepOf = (now: number): number => Math.floor(now / STEP_MS);

/** Changing the factor needs a proof of a credential within the default five minutes. */
const REAUTH_WINDOW_MS = 300_000;
const stale = (m: Model): boolean => m.now - m.provedAt > REAUTH_WINDOW_MS;

/** The code the command sends: computed from the model's secret with the RFC-checked generator. */
function codeFor(m: Model, kind: CodeKind): string {
  const cur = stepOf(m.now);
  const secret = m.secret ?? new Uint8Array(20);
  const at = (step: number) => codeForStep(secret, step);
  switch (kind) {
    case 'current':
      return at(cur);
    case 'previous':
      return at(cur - 1);
    case 'next':
      return at(cur + 1);
    case 'stale':
      return at(cur - 2);
    case 'future':
      return at(cur + 2);
    case 'replay':
      return at(m.lastAccepted ?? cur);
    case 'wrong': {
      const near = new Set([-2, -1, 0, 1, 2].map((d) => at(cur + d)));
      return ['000000', '111111', '222222', '333333', '444444', '555555'].find((c) => !near.has(c))!;
    }
  }
}

/** The model's own acceptance rule: within one step of now, strictly above the highest used. */
function modelStep(m: Model, code: string, highest: number | null): number | null {
  if (m.secret === null) return null;
  const cur = stepOf(m.now);
  for (let step = cur - 1; step <= cur + 1; step++) {
    if (highest !== null && step <= highest) continue;
    if (codeForStep(m.secret, step) === code) return step;
  }
  return null;
}

function accept(m: Model, step: number): void {
  const key = `${m.generation}:${step}`;
  // Invariant: no step is ever accepted twice for the same secret.
  same(m.accepted.has(key), false, `step ${key} accepted twice`);
  m.accepted.add(key);
  m.highest = step;
  m.lastAccepted = step;
}

/** Invariants after every command, read from the real stores. */
async function checkInvariants(m: Model, r: Real): Promise<void> {
  // No session without a valid code once confirmed: the ledger holds exactly the sessions the model opened.
  same((await r.store.listOpenSessions(r.principal.accountId)).length, m.sessions, 'open sessions');
  for (const c of m.challenges) same(c.checks <= 5, true, `code checks on one challenge (${c.checks})`);
  const row = await r.totpStore.findTotpEnrollment(r.principal.accountId);
  same(row?.state ?? 'none', m.phase, 'enrollment state');
  same(row?.highestUsedStep ?? null, m.phase === 'confirmed' ? m.highest : null, 'highest used step');
}

class Enroll implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const res = await r.core.totp.enroll(r.principal);
    if (stale(m)) {
      refused(res, 'error.auth.reauthentication_required');
    } else if (m.phase === 'confirmed') {
      refused(res, 'error.auth.totp_already_enrolled');
    } else {
      if (!res.ok) throw new Error(`enroll refused: ${res.code}`);
      m.phase = 'pending';
      m.secret = Secret.fromBase32(res.value.secret).bytes;
      m.generation++;
      m.highest = null;
      m.lastAccepted = null;
    }
    await checkInvariants(m, r);
  }
  toString = () => 'Enroll';
}

class VerifyEnrollment implements fc.AsyncCommand<Model, Real> {
  constructor(readonly kind: CodeKind) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const code = codeFor(m, this.kind);
    const res = await r.core.totp.verifyEnrollment(r.principal, code);
    if (stale(m)) refused(res, 'error.auth.reauthentication_required');
    else if (m.phase === 'none') refused(res, 'error.auth.totp_not_enrolled');
    else if (m.phase === 'confirmed') refused(res, 'error.auth.totp_already_enrolled');
    else {
      const step = modelStep(m, code, null);
      same(res.ok, step !== null, `verify-enrollment ${this.kind}`);
      if (!res.ok) refused(res, 'error.auth.invalid_code');
      if (step !== null) {
        m.phase = 'confirmed';
        accept(m, step);
      }
    }
    await checkInvariants(m, r);
  }
  toString = () => `VerifyEnrollment(${this.kind})`;
}

class Disable implements fc.AsyncCommand<Model, Real> {
  constructor(readonly kind: CodeKind) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const code = codeFor(m, this.kind);
    const res = await r.core.totp.disable(r.principal, code);
    if (stale(m)) refused(res, 'error.auth.reauthentication_required');
    else if (m.phase !== 'confirmed') refused(res, 'error.auth.totp_not_enrolled');
    else {
      const step = modelStep(m, code, m.highest);
      same(res.ok, step !== null, `disable ${this.kind}`);
      if (!res.ok) refused(res, 'error.auth.invalid_code');
      if (step !== null) {
        accept(m, step);
        m.phase = 'none';
        m.secret = null;
        m.highest = null;
      }
    }
    await checkInvariants(m, r);
  }
  toString = () => `Disable(${this.kind})`;
}

class Login implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const res = await r.core.accounts.login({ address: ADDRESS, password: PASSWORD, cohortHash: null });
    if (!res.ok) throw new Error(`login refused: ${res.code}`);
    if (m.phase === 'confirmed') {
      if (res.value.kind !== 'challenge') throw new Error('a confirmed factor must gate the session');
      m.challenges.push({ token: res.value.challenge, expiresAt: m.now + 300_000, counted: 0, checks: 0, used: false });
    } else {
      same(res.value.kind, 'session', 'login outcome');
      m.sessions++;
    }
    await checkInvariants(m, r);
  }
  toString = () => 'Login';
}

class VerifyTotp implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly kind: CodeKind,
  ) {}
  check = (m: Readonly<Model>) => m.challenges.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    // A negative pick counts from the newest challenge.
    const n = m.challenges.length;
    const c = m.challenges[this.pick < 0 ? Math.max(0, n + this.pick) : this.pick % n]!;
    const code = codeFor(m, this.kind);
    const res = await r.core.totp.verifyLogin({ challenge: c.token, code, cohortHash: null });
    if (c.used || m.now >= c.expiresAt) {
      refused(res, 'error.auth.challenge_invalid');
    } else {
      c.counted++;
      if (c.counted > 5) {
        refused(res, 'error.auth.challenge_exhausted');
      } else if (m.phase !== 'confirmed') {
        refused(res, 'error.auth.challenge_invalid');
        c.used = true;
      } else {
        c.checks++;
        const step = modelStep(m, code, m.highest);
        if (step === null) {
          refused(res, 'error.auth.invalid_code', 5 - c.counted);
        } else {
          same(res.ok, true, `verify-totp ${this.kind}`);
          accept(m, step);
          c.used = true;
          m.sessions++;
        }
      }
    }
    await checkInvariants(m, r);
  }
  toString = () => `VerifyTotp(${this.pick}, ${this.kind})`;
}

class Reauthenticate implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const res = await r.core.accounts.reauthenticate(r.principal, PASSWORD);
    same(res.ok, true, 'reauthenticate');
    m.provedAt = m.now;
    await checkInvariants(m, r);
  }
  toString = () => 'Reauthenticate';
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

/**
 * The TOTP second factor as a model-based property: random sequences of enroll,
 * verify-enrollment, disable, login and verify-totp with right, drifted, stale, future, replayed
 * and wrong codes, and clock advances, run against the real services over the stores
 * `makeStores` returns. After every step: no step is accepted twice for one secret, the ledger
 * holds exactly the sessions a valid code (or an ungated login) opened, no challenge sees more
 * than five code checks, and the stored state and highest used step match the model. Core runs
 * it over the in-memory stores; each adapter runs it over its own.
 */
export function totpModelProperty(
  makeStores: () => Promise<{ store: Store; totpStore: TotpStore }>,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<Model, Real>>, number]> {
  const kind = fc.constantFrom(...CODE_KINDS);
  // Mostly codes a real device would show, so runs reach Confirmed and long challenge sequences.
  const likely = fc.oneof(
    { arbitrary: fc.constantFrom<CodeKind>('current', 'previous', 'next'), weight: 2 },
    { arbitrary: kind, weight: 1 },
  );
  const commands = [
    fc.constant(new Enroll()),
    likely.map((k) => new VerifyEnrollment(k)),
    likely.map((k) => new VerifyEnrollment(k)),
    kind.map((k) => new Disable(k)),
    fc.constant(new Login()),
    fc.constant(new Login()),
    fc.constant(new Reauthenticate()),
    // Sign-in attempts on any challenge, and more often on the newest two so runs reach the sixth.
    fc.tuple(fc.nat(10), kind).map(([p, k]) => new VerifyTotp(p, k)),
    fc.tuple(fc.nat(1), kind).map(([p, k]) => new VerifyTotp(-1 - p, k)),
    fc
      .tuple(fc.nat(1), fc.constantFrom<CodeKind>('wrong', 'stale', 'replay', 'future'))
      .map(([p, k]) => new VerifyTotp(-1 - p, k)),
    fc
      .tuple(fc.nat(1), fc.constantFrom<CodeKind>('wrong', 'stale', 'replay', 'future'))
      .map(([p, k]) => new VerifyTotp(-1 - p, k)),
    fc
      .oneof(fc.integer({ min: 1, max: 40_000 }), fc.integer({ min: 200_000, max: 400_000 }))
      .map((ms) => new AdvanceClock(ms)),
  ];
  return fc.asyncProperty(
    fc.commands(commands, { maxCommands: 80, size: 'max' }),
    fc.integer({ min: 0, max: STEP_MS - 1 }),
    async (cmds, offset) => {
      const clock = new FakeClock(Date.parse('2026-11-21T10:00:00.000Z') + offset);
      const { store, totpStore } = await makeStores();
      const core = await createCoreServices({
        store,
        clock,
        random: new SeededRandom(offset),
        hasher: new PlainHasher(),
        logger: new MemoryLogger(),
        totpStore,
      });
      const reg = await core.accounts.register({ address: ADDRESS, password: PASSWORD });
      if (!reg.ok) throw new Error('register');
      const who = await core.sessions.authenticate(reg.value.accessToken);
      if (!who.ok) throw new Error('authenticate');
      const model: Model = {
        now: clock.now(),
        phase: 'none',
        secret: null,
        generation: 0,
        highest: null,
        lastAccepted: null,
        accepted: new Set(),
        challenges: [],
        sessions: 1,
        provedAt: clock.now(),
      };
      await fc.asyncModelRun(() => ({ model, real: { core, clock, store, totpStore, principal: who.value } }), cmds);
    },
  );
}
