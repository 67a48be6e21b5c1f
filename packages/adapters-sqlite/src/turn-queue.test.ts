import { afterEach, describe, expect, it } from 'vitest';
import { Arrivals } from '@strongroom/sql-common';
import { TurnQueue } from './turn-queue.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Keeps work arriving on `arrivals` every turn until stopped: a busy server, as the hold sees it. */
function keepArriving(arrivals: Arrivals): { stop(): void } {
  let on = true;
  const tick = () => {
    if (!on) return;
    arrivals.count++;
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
    const q = new TurnQueue<number>((b) => batches.push(b), { maxBatch: 3 });
    for (let i = 0; i < 7; i++) q.push(i);
    expect(batches).toEqual([]);
    await nextTurn();
    expect(batches).toEqual([[0, 1, 2]]);
    await nextTurn();
    await nextTurn();
    expect(batches).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
  });

  it('with a hold, an idle process still passes a lone item on at the next turn', async () => {
    const batches: number[][] = [];
    const q = new TurnQueue<number>((b) => batches.push(b), { maxBatch: 10, arrivals: new Arrivals(), holdMs: 60_000 });
    q.push(1);
    await nextTurn();
    expect(batches).toEqual([[1]]);
  });

  it('holds a batch while other work keeps arriving, so items of later turns join it', async () => {
    const arrivals = new Arrivals();
    const batches: number[][] = [];
    const q = new TurnQueue<number>((b) => batches.push(b), { maxBatch: 10, arrivals, holdMs: 60_000 });
    busy = keepArriving(arrivals);
    q.push(1);
    await nextTurn();
    q.push(2);
    await nextTurn();
    q.push(3);
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(batches).toEqual([]);
    // The server goes quiet: the held batch goes on as one.
    busy.stop();
    for (let i = 0; i < 3; i++) await nextTurn();
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('never holds longer than holdMs, however busy the process stays', async () => {
    const arrivals = new Arrivals();
    let passedAt = 0;
    const q = new TurnQueue<number>(() => (passedAt = performance.now()), { maxBatch: 10, arrivals, holdMs: 20 });
    busy = keepArriving(arrivals);
    const start = performance.now();
    q.push(1);
    while (passedAt === 0) await new Promise((r) => setTimeout(r, 5));
    expect(passedAt - start).toBeGreaterThanOrEqual(20);
    expect(passedAt - start).toBeLessThan(1_000);
  });

  it('stops holding once the batch is full', async () => {
    const arrivals = new Arrivals();
    const batches: number[][] = [];
    const q = new TurnQueue<number>((b) => batches.push(b), { maxBatch: 3, arrivals, holdMs: 60_000 });
    busy = keepArriving(arrivals);
    q.push(1);
    await nextTurn();
    expect(batches).toEqual([]);
    q.push(2);
    q.push(3);
    await nextTurn();
    await nextTurn();
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('counts its own pushes as arrivals, so the queues of one connection see each other', () => {
    const arrivals = new Arrivals();
    const q = new TurnQueue<number>(() => {}, { maxBatch: 3, arrivals });
    q.push(1);
    q.push(2);
    expect(arrivals.count).toBe(2);
  });
});
