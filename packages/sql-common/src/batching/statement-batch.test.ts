import { describe, expect, it } from 'vitest';
import { HandleLoad, loadOf } from './load.js';
import { StatementBatch } from './statement-batch.js';

const tick = () => new Promise((r) => setImmediate(r));

/** A batch whose statements answer their inputs back only when the test releases them, in order. */
function heldBatch(options: ConstructorParameters<typeof StatementBatch<number, number>>[1]) {
  const release: (() => void)[] = [];
  const seen: (readonly number[])[] = [];
  const batch = new StatementBatch<number, number>((xs) => {
    seen.push(xs);
    return new Promise((resolve) => release.push(() => resolve(xs)));
  }, options);
  return { batch, release, seen };
}

describe('StatementBatch', () => {
  it('answers the calls of one turn with one statement, each with its own answer', async () => {
    const seen: (readonly number[])[] = [];
    const batch = new StatementBatch<number, number>(async (xs) => {
      seen.push(xs);
      return xs.map((x) => x * 10);
    });
    const answers = await Promise.all([1, 2, 3, 2].map((x) => batch.run(x)));
    expect(answers).toEqual([10, 20, 30, 20]);
    expect(seen).toEqual([[1, 2, 3, 2]]);
    expect(batch.statements).toBe(1);
  });

  it('a call made while a statement is in flight waits for the next one (reads start after their callers asked)', async () => {
    const release: (() => void)[] = [];
    const seen: (readonly string[])[] = [];
    const batch = new StatementBatch<string, string>((xs) => {
      seen.push(xs);
      return new Promise((resolve) => release.push(() => resolve(xs.map((x) => x.toUpperCase()))));
    });
    const first = batch.run('a');
    await tick();
    expect(seen).toEqual([['a']]);
    const second = batch.run('b');
    await tick();
    expect(seen).toEqual([['a'], ['b']]);
    release[1]!();
    expect(await second).toBe('B');
    release[0]!();
    expect(await first).toBe('A');
  });

  it('a failed statement fails every call in its batch, and only those', async () => {
    let fail = true;
    const batch = new StatementBatch<number, number>(async (xs) => {
      if (fail) throw new Error('connection reset');
      return xs;
    });
    const outcomes = await Promise.allSettled([batch.run(1), batch.run(2)]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await batch.run(3)).toBe(3);
  });

  it('an exec that throws synchronously, or answers the wrong number of calls, rejects the batch', async () => {
    const throwing = new StatementBatch<number, number>(() => {
      throw new Error('bad statement');
    });
    await expect(throwing.run(1)).rejects.toThrow('bad statement');
    const short = new StatementBatch<number, number>(async (xs) => xs.slice(1));
    await expect(Promise.all([short.run(1), short.run(2)])).rejects.toThrow(/answered 1 of 2/);
  });

  it('splits a long queue into statements of at most maxBatch', async () => {
    const sizes: number[] = [];
    const batch = new StatementBatch<number, number>(
      async (xs) => {
        sizes.push(xs.length);
        return xs;
      },
      { maxBatch: 4 },
    );
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => batch.run(i)));
    expect(answers).toEqual(Array.from({ length: 10 }, (_, i) => i));
    expect(sizes).toEqual([4, 4, 2]);
  });
});

describe('StatementBatch with maxInFlight', () => {
  it('keeps at most that many batches running; what arrives meanwhile waits and goes out together', async () => {
    const { batch, release, seen } = heldBatch({ maxInFlight: 1 });
    const first = batch.run(1);
    await tick();
    const later = [batch.run(2), batch.run(3)];
    await tick();
    await tick();
    expect(seen).toEqual([[1]]);
    release.shift()!();
    expect(await first).toBe(1);
    await tick();
    await tick();
    expect(seen).toEqual([[1], [2, 3]]);
    release.shift()!();
    expect(await Promise.all(later)).toEqual([2, 3]);
  });

  it('a failed batch frees its place for the next', async () => {
    let fail = true;
    const batch = new StatementBatch<number, number>(
      async (xs) => {
        if (fail) throw new Error('deadlock');
        return xs;
      },
      { maxInFlight: 1 },
    );
    await expect(batch.run(1)).rejects.toThrow('deadlock');
    fail = false;
    expect(await batch.run(2)).toBe(2);
  });

  describe('holding a batch (reads and writes alike) while the pool is busy', () => {
    /** Another batch on the same pool, called once a turn until stopped: a loaded server's other calls. */
    function readsKeepArriving(load: HandleLoad): { stop(): void } {
      const reads = new StatementBatch<number, number>(async (xs) => xs, { load });
      let on = true;
      void (async () => {
        while (on) await reads.run(0);
      })();
      return { stop: () => (on = false) };
    }

    it('an idle pool sends at the next turn, hold or not', async () => {
      const seen: (readonly number[])[] = [];
      const batch = new StatementBatch<number, number>(async (xs) => (seen.push(xs), xs), {
        load: new HandleLoad(),
        holdMs: 60_000,
      });
      const answer = batch.run(1);
      await tick();
      expect(seen).toEqual([[1]]);
      expect(await answer).toBe(1);
    });

    it('while other calls keep arriving, writes of several turns go out as one statement', async () => {
      const load = new HandleLoad();
      const seen: (readonly number[])[] = [];
      const writes = new StatementBatch<number, number>(async (xs) => (seen.push(xs), xs), { load, holdMs: 60_000 });
      const busy = readsKeepArriving(load);
      const answers = [writes.run(1)];
      await tick();
      answers.push(writes.run(2));
      await tick();
      answers.push(writes.run(3));
      await tick();
      expect(seen).toEqual([]);
      busy.stop();
      expect(await Promise.all(answers)).toEqual([1, 2, 3]);
      expect(seen).toEqual([[1, 2, 3]]);
    });

    it('never holds longer than holdMs, however busy the pool stays', async () => {
      const load = new HandleLoad();
      const writes = new StatementBatch<number, number>(async (xs) => xs, { load, holdMs: 20 });
      const busy = readsKeepArriving(load);
      try {
        const start = performance.now();
        await writes.run(1);
        expect(performance.now() - start).toBeGreaterThanOrEqual(20);
        expect(performance.now() - start).toBeLessThan(1_000);
      } finally {
        busy.stop();
      }
    });

    it('every batch over one database handle shares its load', () => {
      const db = {};
      expect(loadOf(db)).toBe(loadOf(db));
      expect(loadOf({})).not.toBe(loadOf(db));
    });
  });

  describe('its bound (load shedding)', () => {
    it('counts calls waiting and in flight; past the bound one more is refused at once with error.server.busy and never reaches a statement', async () => {
      const load = new HandleLoad();
      load.queueBound = 3;
      const { batch, release, seen } = heldBatch({ load, maxInFlight: 1 });
      const inFlight = [batch.run(1), batch.run(2)];
      await tick();
      const waiting = batch.run(3);
      await expect(batch.run(4)).rejects.toMatchObject({ code: 'error.server.busy' });
      expect(batch.held).toBe(3);
      release[0]!();
      expect(await Promise.all(inFlight)).toEqual([1, 2]);
      // The answered batch gave its places back: two more fit beside the one waiting.
      const more = [batch.run(5), batch.run(6)];
      await expect(batch.run(7)).rejects.toMatchObject({ code: 'error.server.busy' });
      await tick();
      release[1]!();
      expect(await Promise.all([waiting, ...more])).toEqual([3, 5, 6]);
      expect(seen).toEqual([
        [1, 2],
        [3, 5, 6],
      ]);
      expect(batch.held).toBe(0);
    });

    it('a failed statement gives its places back too', async () => {
      const load = new HandleLoad();
      load.queueBound = 1;
      let fail = true;
      const batch = new StatementBatch<number, number>(
        async (xs) => {
          if (fail) throw new Error('connection reset');
          return xs;
        },
        { load },
      );
      await expect(batch.run(1)).rejects.toThrow('connection reset');
      fail = false;
      expect(await batch.run(2)).toBe(2);
    });
  });
});
