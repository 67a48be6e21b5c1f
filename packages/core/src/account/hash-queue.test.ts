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
  return { hasher, finishOne, get pending() {
    return pending.length;
  } };
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
    for (const bounds of [{ maxWaitMs: 0, learn: true }, { maxWaitMs: 100, learn: false }]) {
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
