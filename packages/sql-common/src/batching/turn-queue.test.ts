import { afterEach, describe, expect, it } from 'vitest';
import { HandleLoad } from './load.js';
import { CoreError } from '@strongroom/core';
import { TurnQueue, type QueuedCall } from './turn-queue.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Keeps work arriving on `load` every turn until stopped: a busy server, as the hold sees it. */
function keepArriving(load: HandleLoad): { stop(): void } {
  let on = true;
  const tick = () => {
    if (!on) return;
    load.arrivals++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return { stop: () => (on = false) };
}

describe('TurnQueue', () => {
  let busy: { stop(): void } | null = null;
  afterEach(() => busy?.stop());

  it('passes what arrived in one turn on together at the next, at most maxBatch at a time', async () => {
    const batches: number[][] = [];
    const q = new TurnQueue<number>((b) => batches.push(b.map((c) => c.work)), { maxBatch: 3 });
    for (let i = 0; i < 7; i++) void q.call(i);
    expect(batches).toEqual([]);
    await nextTurn();
    expect(batches).toEqual([[0, 1, 2]]);
    await nextTurn();
    await nextTurn();
    expect(batches).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
  });

  it('with a hold, an idle process still passes a lone item on at the next turn', async () => {
    const batches: number[][] = [];
    const q = new TurnQueue<number>((b) => batches.push(b.map((c) => c.work)), {
      maxBatch: 10,
      load: new HandleLoad(),
      holdMs: 60_000,
    });
    void q.call(1);
    await nextTurn();
    expect(batches).toEqual([[1]]);
  });

  it('holds a batch while other work keeps arriving, so items of later turns join it', async () => {
    const load = new HandleLoad();
    const batches: number[][] = [];
    const q = new TurnQueue<number>((b) => batches.push(b.map((c) => c.work)), { maxBatch: 10, load, holdMs: 60_000 });
    busy = keepArriving(load);
    void q.call(1);
    await nextTurn();
    void q.call(2);
    await nextTurn();
    void q.call(3);
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(batches).toEqual([]);
    // The server goes quiet: the held batch goes on as one.
    busy.stop();
    for (let i = 0; i < 3; i++) await nextTurn();
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('never holds longer than holdMs, however busy the process stays', async () => {
    const load = new HandleLoad();
    let passedAt = 0;
    const q = new TurnQueue<number>(() => (passedAt = performance.now()), { maxBatch: 10, load, holdMs: 20 });
    busy = keepArriving(load);
    const start = performance.now();
    void q.call(1);
    while (passedAt === 0) await new Promise((r) => setTimeout(r, 5));
    expect(passedAt - start).toBeGreaterThanOrEqual(20);
    expect(passedAt - start).toBeLessThan(1_000);
  });

  it('stops holding once the batch is full', async () => {
    const load = new HandleLoad();
    const batches: number[][] = [];
    const q = new TurnQueue<number>((b) => batches.push(b.map((c) => c.work)), { maxBatch: 3, load, holdMs: 60_000 });
    busy = keepArriving(load);
    void q.call(1);
    await nextTurn();
    expect(batches).toEqual([]);
    void q.call(2);
    void q.call(3);
    await nextTurn();
    await nextTurn();
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('counts its own pushes as arrivals, so the queues of one connection see each other', () => {
    const load = new HandleLoad();
    const q = new TurnQueue<number>(() => {}, { maxBatch: 3, load });
    void q.call(1);
    void q.call(2);
    expect(load.arrivals).toBe(2);
  });

  describe('its bound (load shedding)', () => {
    const busy = { code: 'error.server.busy' };

    it('past the bound a call is refused at once with error.server.busy, and a call in a batch still counts until it is answered', async () => {
      const load = new HandleLoad();
      load.queueBound = 2;
      const flushed: QueuedCall<number>[][] = [];
      const q = new TurnQueue<number>((b) => flushed.push(b), { maxBatch: 10, load });
      const first = q.call(1);
      const second = q.call(2);
      const refused = q.call(3);
      await expect(refused).rejects.toBeInstanceOf(CoreError);
      await expect(refused).rejects.toMatchObject(busy);
      await nextTurn();
      // Both are in a batch now, not yet answered: the queue is still full.
      expect(flushed.map((b) => b.map((c) => c.work))).toEqual([[1, 2]]);
      await expect(q.call(4)).rejects.toMatchObject(busy);
      expect(q.held).toBe(2);
      // A refused call never reached a batch and is not an arrival.
      expect(load.arrivals).toBe(2);
      flushed[0]![0]!.resolve('one');
      expect(await first).toBe('one');
      expect(q.held).toBe(1);
      // Answering a call twice gives its place back once.
      flushed[0]![0]!.resolve('again');
      expect(q.held).toBe(1);
      const third = q.call(5);
      await expect(q.call(6)).rejects.toMatchObject(busy);
      flushed[0]![1]!.reject(new Error('failed'));
      await expect(second).rejects.toThrow('failed');
      await nextTurn();
      flushed[1]![0]!.resolve('five');
      expect(await third).toBe('five');
      expect(q.held).toBe(0);
    });

    it('reads the bound of its handle when a call arrives, so it may be set after the queue was made', async () => {
      const load = new HandleLoad();
      const q = new TurnQueue<number>(() => {}, { maxBatch: 10, load });
      load.queueBound = 1;
      void q.call(1);
      await expect(q.call(2)).rejects.toMatchObject(busy);
    });
  });
});
