import fc from 'fast-check';
import { admissionBound, takeToken, type Bucket } from '../../peer-rate-limit/bucket.js';
import type { PeerRateStore } from '../../ports/peer-rate-store.js';

function same(actual: unknown, expected: unknown, what: string): void {
  if (actual !== expected) throw new Error(`${what}: expected ${String(expected)}, got ${String(actual)}`);
}

interface Model {
  now: number;
  /** The bucket as the one pure rule says it must be after every take so far. */
  bucket: Bucket | null;
  /** Instants of every admitted take. */
  admitted: number[];
}
interface Real {
  readonly stores: readonly [PeerRateStore, PeerRateStore];
  readonly peer: string;
  readonly rate: number;
  clock: number;
}

/** Draws one token through store `which` at the current instant. */
class Take implements fc.AsyncCommand<Model, Real> {
  constructor(readonly which: 0 | 1) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const got = await r.stores[this.which].takePeerToken(r.peer, m.now, r.rate);
    const want = takeToken(m.bucket, m.now, r.rate);
    // Both stores share one bucket: each decision is the rule applied to the other's last write.
    same(got.admitted, want.admitted, `admitted at ${m.now}`);
    same(got.bucket.level, want.bucket.level, 'bucket level');
    same(got.retryAfterS, want.retryAfterS, 'retry-after');
    m.bucket = want.bucket;
    if (got.admitted) {
      m.admitted.push(m.now);
    } else {
      // A refusal's Retry-After is honest: waiting that long finds a token.
      same(got.retryAfterS >= 1, true, 'retry-after at least one second');
      same(takeToken(got.bucket, m.now + got.retryAfterS * 1000, r.rate).admitted, true, 'a token after Retry-After');
    }
    // The guarantee: in every window ending now, at most a full bucket plus what refilled.
    for (let i = 0; i < m.admitted.length; i++) {
      const count = m.admitted.length - i;
      const bound = admissionBound(r.rate, m.now - m.admitted[i]!);
      if (count > bound) throw new Error(`${count} admitted in ${m.now - m.admitted[i]!} ms, at most ${bound} allowed`);
    }
    same(m.bucket.level <= r.rate * 60_000 && m.bucket.level >= 0, true, 'level within [0, capacity]');
  }
  toString = () => `take(${this.which})`;
}

class Advance implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock = m.now;
  }
  toString = () => `advance(${this.ms})`;
}

/** A minute without takes fills the bucket: then `rate` takes in a row are all admitted. */
class Burst implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += 60_000;
    for (let i = 0; i < r.rate; i++) {
      await new Take((i % 2) as 0 | 1).run(m, r);
      same(m.admitted.at(-1), m.now, `take ${i + 1} of a full bucket admitted`);
    }
    await new Take(0).run(m, r);
    same(m.admitted.filter((t) => t === m.now).length, r.rate, 'nothing beyond the bucket at one instant');
  }
  toString = () => 'burst';
}

/**
 * The per-peer bucket as a model-based property: takes through two store instances sharing one
 * database, interleaved with clock advances. After every take the stored decision equals core's
 * rule applied to the shared bucket, Retry-After is honest, and no window ever admits more than a
 * full bucket plus its refill. Core runs it in memory; each adapter over its own database.
 */
export function peerBucketModelProperty(
  openTwo: () => Promise<readonly [PeerRateStore, PeerRateStore]>,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<Model, Real>>, number, number]> {
  const commands = [
    fc.constantFrom<0 | 1>(0, 1).map((w) => new Take(w)),
    fc.constantFrom<0 | 1>(0, 1).map((w) => new Take(w)),
    fc.constantFrom<0 | 1>(0, 1).map((w) => new Take(w)),
    fc.oneof(fc.integer({ min: 1, max: 3_000 }), fc.integer({ min: 3_000, max: 70_000 })).map((ms) => new Advance(ms)),
    fc.constant(new Burst()),
  ];
  let run = 0;
  return fc.asyncProperty(
    fc.commands(commands, { maxCommands: 60 }),
    fc.integer({ min: 1, max: 6 }),
    fc.nat(59_999),
    async (cmds, rate, offset) => {
      const stores = await openTwo();
      const now = Date.parse('2026-11-21T10:00:00.000Z') + offset;
      const real: Real = { stores, peer: `https://peer-${++run}.example`, rate, clock: now };
      await fc.asyncModelRun(() => ({ model: { now, bucket: null, admitted: [] }, real }), cmds);
    },
  );
}
