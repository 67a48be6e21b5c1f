import { describe, expect, it, vi } from 'vitest';
import { Argon2Hasher, OWASP_ARGON2ID, Slots } from './argon2-hasher.js';

describe('Argon2Hasher', () => {
  const hasher = new Argon2Hasher();
  it('produces argon2id PHC strings with at least the OWASP parameters', async () => {
    const h = await hasher.hash('correct horse battery');
    expect(h).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await hasher.verify(h, 'correct horse battery')).toBe(true);
    expect(await hasher.verify(h, 'correct horse batterx')).toBe(false);
  });
  it('salts every hash', async () => {
    expect(await hasher.hash('same password here')).not.toBe(await hasher.hash('same password here'));
  });
  it('treats a malformed stored hash as a mismatch', async () => {
    expect(await hasher.verify('not-a-hash', 'whatever password')).toBe(false);
  });
  it('refuses parameters below the OWASP floor', () => {
    expect(() => new Argon2Hasher({ memoryCost: 4096, timeCost: 1, parallelism: 1 })).toThrow(RangeError);
  });
});

describe('Slots (how many hashes run at once)', () => {
  it('runs at most its size at a time, the rest in arrival order, and frees a slot on failure too', async () => {
    const slots = new Slots(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const task =
      (i: number, fail = false) =>
      async () => {
        started.push(i);
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        if (fail) throw new Error(`task ${i} failed`);
        return i;
      };
    // Each task holds its slot across a timer; fake timers fire them once every task that can start
    // has started, so the overlap is the queue's doing and no test waits on the wall clock.
    vi.useFakeTimers();
    try {
      const settled = Promise.allSettled([0, 1, 2, 3, 4].map((i) => slots.run(task(i, i === 1))));
      await vi.runAllTimersAsync();
      const outcomes = await settled;
      expect(most).toBe(2);
      expect(started).toEqual([0, 1, 2, 3, 4]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
      // Every slot came back: two more run side by side at once.
      running = 0;
      most = 0;
      const both = Promise.all([slots.run(task(5)), slots.run(task(6))]);
      await vi.runAllTimersAsync();
      await both;
      expect(most).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('the hasher itself still hashes and verifies through its single slot', async () => {
    const hasher = new Argon2Hasher(OWASP_ARGON2ID, 1);
    const [a, b] = await Promise.all([hasher.hash('one'), hasher.hash('two')]);
    expect(await Promise.all([hasher.verify(a, 'one'), hasher.verify(b, 'one'), hasher.verify(b, 'two')])).toEqual([
      true,
      false,
      true,
    ]);
  });
});
