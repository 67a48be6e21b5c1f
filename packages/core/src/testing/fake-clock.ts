import type { Clock } from '../ports/clock.js';

/** A clock that only moves when told to. */
export class FakeClock implements Clock {
  #now: number;
  constructor(start: number | string = '2026-11-21T10:00:00.000Z') {
    this.#now = typeof start === 'number' ? start : Date.parse(start);
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  set(ms: number): void {
    this.#now = ms;
  }
}
