import { describe, expect, it } from 'vitest';
import type { PasswordHasher } from '../ports/password-hasher.js';
import { FakeClock } from '../testing/fake-clock.js';
import { BoundedHasher } from './hash-queue.js';

/** A hasher whose checks finish when the test says, each after the clock moved by `ms`. */
function heldHasher(clock: FakeClock) {
  const pending: (() => void)[] = [];
  const hasher: PasswordHasher = {
    hash: () => new Promise((done) => pending.push(() => done('h'))),
    verify: () => new Promise((done) => pending.push(() => done(true))),
  };
  const finishOne = async (ms: number) => {
    clock.advance(ms);
    pending.shift()!();
    // Let the finished check hand its slot over before the test goes on.
    await new Promise((r) => setImmediate(r));
  };
  return {
    hasher,
    finishOne,
    get pending() {
      return pending.length;
    },
  };
}

const busy = { code: 'error.server.busy' };

describe('BoundedHasher: the bound on waiting sign-ins', () => {
  it('refuses a check whose expected wait passes maxWaitMs, at the pace checks have been finishing', async () => {
    const clock = new FakeClock(0);
    const held = heldHasher(clock);
    const bounded = new BoundedHasher(held.hasher, { running: 1, waiting: 100, maxWaitMs: 100, clock });
    // One check that takes 40 ms teaches the mean.
    const first = bounded.verify('h', 'p');
    await held.finishOne(40);
    await expect(first).resolves.toBe(true);
    expect(bounded.load.meanMs).toBe(40);
    // One running; the first two behind it expect 40 and 80 ms, the third 120 ms: refused at once.
    const running = bounded.verify('h', 'p');
    const waiting = [bounded.verify('h', 'p'), bounded.verify('h', 'p')];
    await expect(bounded.verify('h', 'p')).rejects.toMatchObject(busy);
    expect(bounded.load).toMatchObject({ running: 1, waiting: 2 });
    // As they finish, there is room again; everyone admitted is answered.
    await held.finishOne(40);
    await expect(running).resolves.toBe(true);
    const later = bounded.verify('h', 'p');
    for (let i = 0; i < 3; i++) await held.finishOne(40);
    await expect(Promise.all([...waiting, later])).resolves.toEqual([true, true, true]);
  });

  it('without a time bound (or before any check finished) only the count bounds the queue', async () => {
    for (const bounds of [
      { maxWaitMs: 0, learn: true },
      { maxWaitMs: 100, learn: false },
    ]) {
      const clock = new FakeClock(0);
      const held = heldHasher(clock);
      const bounded = new BoundedHasher(held.hasher, { running: 1, waiting: 3, maxWaitMs: bounds.maxWaitMs, clock });
      if (bounds.learn) {
        const first = bounded.hash('p');
        await held.finishOne(40);
        await first;
      }
      const admitted = [bounded.hash('p'), bounded.hash('p'), bounded.hash('p'), bounded.hash('p')];
      await expect(bounded.hash('p')).rejects.toMatchObject(busy);
      for (let i = 0; i < 4; i++) await held.finishOne(40);
      await expect(Promise.all(admitted)).resolves.toEqual(['h', 'h', 'h', 'h']);
    }
  });

  it('the expected wait counts the checks ahead `running` at a time', async () => {
    const clock = new FakeClock(0);
    const held = heldHasher(clock);
    const bounded = new BoundedHasher(held.hasher, { running: 2, waiting: 100, maxWaitMs: 100, clock });
    const first = bounded.hash('p');
    await held.finishOne(50);
    await first;
    // Two running; behind them four expect 50, 50, 100, 100 ms; the fifth 150 ms.
    const admitted = Array.from({ length: 6 }, () => bounded.hash('p'));
    await expect(bounded.hash('p')).rejects.toMatchObject(busy);
    while (held.pending > 0) await held.finishOne(50);
    await expect(Promise.all(admitted)).resolves.toHaveLength(6);
  });
});

describe('BoundedHasher: fairness between client addresses', () => {
  /** A hasher whose checks finish in the order they started, one per call of `finishOne`, recording the password each checked. */
  function orderedHasher() {
    const pending: { password: string; done: () => void }[] = [];
    const served: string[] = [];
    const hasher: PasswordHasher = {
      hash: (password) => new Promise((done) => pending.push({ password, done: () => done('h') })),
      verify: (_hash, password) => new Promise((done) => pending.push({ password, done: () => done(true) })),
    };
    const finishOne = async () => {
      const next = pending.shift()!;
      served.push(next.password);
      next.done();
      await new Promise((r) => setImmediate(r));
    };
    return {
      hasher,
      served,
      finishOne,
      get pending() {
        return pending.length;
      },
    };
  }

  it('serves waiting lanes round-robin: a check from a quiet client address waits one check per active lane, not behind the whole flood', async () => {
    const held = orderedHasher();
    const bounded = new BoundedHasher(held.hasher, { running: 1, waiting: 64 });
    const all: Promise<boolean>[] = [bounded.verify('h', 'first', 'flood-a')];
    // Forty checks from two flooding addresses queue first, then one from a quiet address.
    for (let i = 0; i < 20; i++)
      all.push(bounded.verify('h', `a${i}`, 'flood-a'), bounded.verify('h', `b${i}`, 'flood-b'));
    all.push(bounded.verify('h', 'legit', 'quiet'));
    expect(bounded.load.waiting).toBe(41);
    while (held.pending > 0) await held.finishOne();
    await Promise.all(all);
    // After the running one: a0, b0 (each lane's turn), then the quiet one, then the floods alternate.
    expect(held.served.slice(0, 4)).toEqual(['first', 'a0', 'b0', 'legit']);
    expect(held.served.slice(4, 8)).toEqual(['a1', 'b1', 'a2', 'b2']);
    // Within a lane, first come first served.
    expect(held.served.filter((p) => p.startsWith('a'))).toEqual(Array.from({ length: 20 }, (_, i) => `a${i}`));
  });

  it('keeps the bound over all lanes together', async () => {
    const held = orderedHasher();
    const bounded = new BoundedHasher(held.hasher, { running: 1, waiting: 3 });
    const admitted = [
      bounded.verify('h', 'p', 'x'),
      bounded.verify('h', 'p', 'x'),
      bounded.verify('h', 'p', 'y'),
      bounded.verify('h', 'p', 'z'),
    ];
    await expect(bounded.verify('h', 'p', 'w')).rejects.toMatchObject(busy);
    expect(() => bounded.shedIfFull()).toThrow();
    while (held.pending > 0) await held.finishOne();
    await expect(Promise.all(admitted)).resolves.toEqual([true, true, true, true]);
    expect(bounded.load).toMatchObject({ running: 0, waiting: 0 });
  });
});

describe('BoundedHasher: at the bound, the flood is shed rather than a quiet client address', () => {
  it("a newcomer from a lane with fewer waiting takes the place of the longest lane's newest check, which is refused", async () => {
    const pending: (() => void)[] = [];
    const hasher: PasswordHasher = {
      hash: async () => 'h',
      verify: () => new Promise((done) => pending.push(() => done(true))),
    };
    const bounded = new BoundedHasher(hasher, { running: 1, waiting: 4 });
    const running = bounded.verify('h', 'p', 'flood');
    const flood = [1, 2, 3, 4].map(() => bounded.verify('h', 'p', 'flood'));
    const settled = flood.map((p) =>
      p.then(
        () => 'checked',
        (e: { code?: string }) => e.code,
      ),
    );
    // The queue is full of the flood: another check from it is refused, as before.
    await expect(bounded.verify('h', 'p', 'flood')).rejects.toMatchObject(busy);
    expect(() => bounded.shedIfFull('flood')).toThrow();
    // One from a quiet address is not: the flood's newest waiting check gives way.
    expect(() => bounded.shedIfFull('quiet')).not.toThrow();
    const quiet = bounded.verify('h', 'p', 'quiet');
    expect(bounded.load.waiting).toBe(4);
    while (pending.length > 0) {
      pending.shift()!();
      await new Promise((r) => setImmediate(r));
    }
    await expect(Promise.all([running, quiet])).resolves.toEqual([true, true]);
    expect(await Promise.all(settled)).toEqual(['checked', 'checked', 'checked', 'error.server.busy']);
    // Two lanes with one check each: nobody is displaced (a lane must hold two more than the newcomer's).
    const b2 = new BoundedHasher(hasher, { running: 1, waiting: 2 });
    void b2.verify('h', 'p', 'a');
    void b2.verify('h', 'p', 'a');
    void b2.verify('h', 'p', 'b');
    expect(() => b2.shedIfFull('c')).toThrow();
    while (pending.length > 0) {
      pending.shift()!();
      await new Promise((r) => setImmediate(r));
    }
  });
});
