import fc from 'fast-check';
import type { LeaseStore } from '../../ports/lease-store.js';

function same(actual: unknown, expected: unknown, what: string): void {
  if (actual !== expected) throw new Error(`${what}: expected ${String(expected)}, got ${String(actual)}`);
}

const HOLDERS = ['p1', 'p2', 'p3'] as const;
type Holder = (typeof HOLDERS)[number];

/** The lease as its meaning says it must be, written out here rather than asked of the rule under test. */
interface Model {
  now: number;
  holder: Holder | null;
  until: number;
}
interface Real {
  readonly stores: readonly [LeaseStore, LeaseStore];
  readonly name: string;
  readonly ttlMs: number;
}

/** `holder` asks through store `which`: granted exactly when nobody else holds a live lease. */
class Take implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly which: 0 | 1,
    readonly holder: Holder,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const got = await r.stores[this.which].takeLease(r.name, this.holder, m.now, r.ttlMs);
    const free = m.holder === null || m.holder === this.holder || m.until <= m.now;
    same(got, free, `${this.holder} takes at ${m.now} (held by ${m.holder} until ${m.until})`);
    if (got) {
      m.holder = this.holder;
      m.until = m.now + r.ttlMs;
    }
  }
  toString = () => `take(${this.which}, ${this.holder})`;
}

/** `holder` ends the lease through store `which`: only its own, so another's stays held. */
class Release implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly which: 0 | 1,
    readonly holder: Holder,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    await r.stores[this.which].releaseLease(r.name, this.holder);
    if (m.holder === this.holder) m.holder = null;
  }
  toString = () => `release(${this.which}, ${this.holder})`;
}

class Advance implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model): Promise<void> {
    m.now += this.ms;
  }
  toString = () => `advance(${this.ms})`;
}

/** Every holder asks at once, through both stores: exactly one holds the lease, when it was free. */
class Rush implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const wasFree = m.holder === null || m.until <= m.now;
    const got = await Promise.all(
      HOLDERS.map((h, i) => r.stores[(i % 2) as 0 | 1].takeLease(r.name, h, m.now, r.ttlMs)),
    );
    const winners = HOLDERS.filter((_, i) => got[i]);
    if (wasFree) same(winners.length, 1, 'holders after a rush on a free lease');
    else same(winners.join(), m.holder, 'only the live holder keeps it');
    m.holder = winners[0]!;
    m.until = m.now + r.ttlMs;
  }
  toString = () => 'rush';
}

/**
 * A lease as a model-based property: takes, releases and a rush of every holder at once, through
 * two store instances over one database, with the clock moving. At every step a take is granted
 * exactly when nobody else holds a live lease (so two processes never run the job at once), a
 * lapsed lease is taken over, and only its holder ends it. Core runs it in memory; each adapter
 * over its own database.
 */
export function leaseModelProperty(
  openTwo: () => Promise<readonly [LeaseStore, LeaseStore]>,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<Model, Real>>, number]> {
  const who = fc.constantFrom<Holder>(...HOLDERS);
  const store = fc.constantFrom<0 | 1>(0, 1);
  const commands = [
    fc.tuple(store, who).map(([w, h]) => new Take(w, h)),
    fc.tuple(store, who).map(([w, h]) => new Take(w, h)),
    fc.tuple(store, who).map(([w, h]) => new Release(w, h)),
    fc.oneof(fc.integer({ min: 1, max: 2_000 }), fc.integer({ min: 2_000, max: 20_000 })).map((ms) => new Advance(ms)),
    fc.constant(new Rush()),
  ];
  let run = 0;
  return fc.asyncProperty(
    fc.commands(commands, { maxCommands: 40 }),
    fc.integer({ min: 1_000, max: 10_000 }),
    async (cmds, ttlMs) => {
      const stores = await openTwo();
      const real: Real = { stores, name: `job-${++run}`, ttlMs };
      await fc.asyncModelRun(
        () => ({ model: { now: Date.parse('2026-12-07T06:00:00.000Z'), holder: null, until: 0 }, real }),
        cmds,
      );
    },
  );
}
