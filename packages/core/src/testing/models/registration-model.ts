import fc from 'fast-check';
import type { AccountService } from '../../account/service.js';
import type { Ports } from '../../ports/ports.js';
import type { RegistrationGate } from '../../registration/service.js';
import type { RegistrationMode } from '../../registration/rules.js';
import { FakeClock } from '../fake-clock.js';
import { PlainHasher } from '../plain-hasher.js';
import { SeededRandom } from '../seeded-random.js';
import { createCoreServices } from '../services.js';
import { MemoryLogger } from '../silent-logger.js';

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

/** Addresses in several spellings: the same person typed in another case is the same address. */
const ADDRESSES = [
  'ann@family.example',
  'ANN@Family.Example',
  'bob@family.example',
  'kid@sub.family.example',
  'eve@other.example',
  'Eve@OTHER.example',
  'mallory@family.example.evil',
];
/** Entries as an operator types them, in any case. */
const ENTRIES = [
  '@family.example',
  '@FAMILY.EXAMPLE',
  '@other.example',
  '@sub.family.example',
  'ann@family.example',
  'EVE@other.example',
  'x@family.example',
];

interface Model {
  readonly mode: RegistrationMode;
  /** The list as the model reads the rule: lower-cased entries. */
  readonly entries: Set<string>;
  /** Lower-cased addresses that have an account. */
  readonly accounts: Set<string>;
}
interface Process {
  readonly gate: RegistrationGate;
  readonly accounts: AccountService;
}
interface Real {
  readonly processes: Process[];
}

/** The model's own reading of who may register, written apart from decideRegistration. */
function admits(m: Model, address: string): boolean {
  if (m.mode === 'open') return true;
  if (m.mode === 'closed') return false;
  const key = address.toLowerCase();
  return m.entries.has(key) || m.entries.has(`@${key.split('@')[1]}`);
}

class Allow implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly process: number,
    readonly entry: string,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const added = await r.processes[this.process]!.gate.allow(this.entry);
    const key = this.entry.toLowerCase();
    check(
      added.ok && added.value.added === !m.entries.has(key) && added.value.entry === key,
      `allow ${this.entry}: ${JSON.stringify(added)}`,
    );
    m.entries.add(key);
  }
  toString = () => `Allow(${this.process}, ${this.entry})`;
}

class Disallow implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly process: number,
    readonly entry: string,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const removed = await r.processes[this.process]!.gate.disallow(this.entry);
    const key = this.entry.toLowerCase();
    check(
      removed.ok && removed.value.removed === m.entries.has(key),
      `disallow ${this.entry}: ${JSON.stringify(removed)}`,
    );
    m.entries.delete(key);
  }
  toString = () => `Disallow(${this.process}, ${this.entry})`;
}

class Register implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly process: number,
    readonly address: string,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const got = await r.processes[this.process]!.accounts.register({
      address: this.address,
      password: 'correct horse battery',
    });
    const key = this.address.toLowerCase();
    const expected = !admits(m, this.address)
      ? 'error.auth.registration_closed'
      : m.accounts.has(key)
        ? 'error.auth.user_already_exists'
        : 'ok';
    check(
      (got.ok ? 'ok' : got.code) === expected,
      `register ${this.address} through ${this.process}: ${got.ok ? 'ok' : got.code}, model ${expected}`,
    );
    if (got.ok) m.accounts.add(key);
  }
  toString = () => `Register(${this.process}, ${this.address})`;
}

/**
 * Who may register, through two processes over one database: an allowlist change made through
 * either is what the other judges its next registration by, and every answer is the model's.
 * `fresh` gives two port sets over one new database (two connections where the store has them).
 */
export function registrationModelProperty(
  fresh: () => Promise<[Ports, Ports]>,
): fc.IAsyncPropertyWithHooks<[RegistrationMode, Iterable<fc.AsyncCommand<Model, Real>>]> {
  const process = fc.integer({ min: 0, max: 1 });
  const commands = [
    fc.tuple(process, fc.constantFrom(...ENTRIES)).map(([p, e]) => new Allow(p, e)),
    fc.tuple(process, fc.constantFrom(...ENTRIES)).map(([p, e]) => new Disallow(p, e)),
    fc.tuple(process, fc.constantFrom(...ADDRESSES)).map(([p, a]) => new Register(p, a)),
  ];
  return fc.asyncProperty(
    fc.constantFrom<RegistrationMode>('open', 'closed', 'allowlist'),
    fc.commands(commands, { maxCommands: 30 }),
    async (mode, cmds) => {
      const ports = await fresh();
      const clock = new FakeClock();
      const processes: Process[] = [];
      for (const [i, p] of ports.entries()) {
        const core = await createCoreServices({
          store: p.accounts,
          clock,
          random: new SeededRandom(i + 1),
          hasher: new PlainHasher(),
          logger: new MemoryLogger(),
          registration: { mode, allowlist: p.registration },
        });
        processes.push({ gate: core.registration, accounts: core.accounts });
      }
      await fc.asyncModelRun(
        () => ({ model: { mode, entries: new Set<string>(), accounts: new Set<string>() }, real: { processes } }),
        cmds,
      );
    },
  );
}
