import { CoreError } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { PasswordHasher } from '../ports/password-hasher.js';

/** How many password checks may wait for a free hasher before sign-in sheds load (SVC_HASH_QUEUE). */
export const DEFAULT_HASH_QUEUE = 64;

/**
 * The longest a password check is let wait for a free hasher (SVC_HASH_WAIT_MS); 0, the default,
 * sets no time bound. A count alone does not bound the wait: 64 waiting behind two hashers that
 * take 40 ms each under load is 1.3 s, and during a flood every sign-in that gets in waits that
 * long. An operator who would rather refuse at once (and have clients retry after `Retry-After`)
 * sets a time, say 250 ms. Off by default because spec §3.12 fixes the default bound as 64
 * waiting checks, and a time bound sheds well before that: a burst of registrations that the
 * count admits would be partly refused.
 */
export const DEFAULT_HASH_WAIT_MS = 0;

/** How much of the running mean each finished check moves (an exponentially weighted mean). */
const MEAN_WEIGHT = 0.2;

export interface HasherBounds {
  /** Checks that run at once. */
  readonly running: number;
  /** Checks that may wait at most, whatever their expected wait. */
  readonly waiting: number;
  /**
   * With `clock`: a check whose expected wait (the checks ahead of it, at the mean time a check has
   * taken here, `running` at a time) would pass this many milliseconds is refused. 0: no time bound.
   */
  readonly maxWaitMs?: number;
  readonly clock?: Clock;
}

/** A waiting check: `go` hands it the freed hasher, `drop` refuses it. */
interface Waiter {
  readonly go: () => void;
  readonly drop: (e: Error) => void;
}

const busy = () => new CoreError('error.server.busy', 'Too many sign-ins at once; try again in a second.');

/**
 * Sign-in load shedding (spec §3.12): every password
 * hash and check (register, login, password change, reauthenticate) goes through this one bounded
 * queue. At most `running` run at once; behind them wait at most `waiting`, and no more than can
 * start within `maxWaitMs` at the pace checks have been finishing. One more is refused at once
 * with `error.server.busy` (503, Retry-After: 1) before it hashes anything, so the request does
 * nothing. It refuses load, never an account: nothing is counted against anyone.
 *
 * Fairness under a flood (spec §3.12): the waiting checks are kept
 * in one queue per lane (the request's client address; work without one shares the lane `''`), and
 * a freed hasher serves the lanes round-robin, the oldest check of each in turn. A flood from some
 * client addresses then delays a sign-in from another by at most one check per active lane, not
 * by every check the flood queued before it. The bound on waiting checks is over all lanes; at
 * the bound, a newcomer whose lane holds fewer waiting checks than the longest lane (by two or
 * more) takes the place of that lane's newest check, which is refused as busy instead: the flood
 * is shed, not the one sign-in from elsewhere.
 */
export class BoundedHasher implements PasswordHasher {
  readonly #inner: PasswordHasher;
  readonly #running: number;
  readonly #waiting: number;
  readonly #maxWaitMs: number;
  readonly #clock: Clock | null;
  /** The mean time a check took here, once one finished (until then only the count bounds the queue). */
  #meanMs: number | null = null;
  #active = 0;
  /** Waiting checks per lane, oldest first; a lane is here only while it has one. */
  readonly #lanes = new Map<string, Waiter[]>();
  /** The lanes with waiting checks, in the order they will be served. */
  readonly #turns: string[] = [];
  #waitingCount = 0;

  constructor(inner: PasswordHasher, bounds: HasherBounds) {
    this.#inner = inner;
    this.#running = Math.max(1, Math.floor(bounds.running));
    this.#waiting = Math.max(0, Math.floor(bounds.waiting));
    this.#maxWaitMs = Math.max(0, bounds.maxWaitMs ?? 0);
    this.#clock = bounds.clock ?? null;
  }

  hash(password: string, lane = ''): Promise<string> {
    return this.#admit(() => this.#inner.hash(password), lane);
  }

  verify(hash: string, password: string, lane = ''): Promise<boolean> {
    return this.#admit(() => this.#inner.verify(hash, password), lane);
  }

  /**
   * Refuses (error.server.busy) when a check asked for now would be refused, so that a sign-in the
   * queue has no room for is turned away before anything else is done for it (the account read
   * included): during a flood, a refusal costs the least it can. Not a reservation: the check
   * itself is admitted or refused again when it comes.
   */
  shedIfFull(lane = ''): void {
    if (this.#full(lane)) throw busy();
  }

  /** Checks running and waiting now, and the mean time a check took (for metrics and tests). */
  get load(): { running: number; waiting: number; meanMs: number | null } {
    return { running: this.#active, waiting: this.#waitingCount, meanMs: this.#meanMs };
  }

  /**
   * What a newcomer in `lane` would wait: served round-robin, ahead of it are its own lane's
   * waiting checks and, from every other lane, as many as one more than that; they pass `running`
   * at a time, each taking the mean.
   */
  #expectedWaitMs(lane: string): number {
    if (this.#meanMs === null) return 0;
    const own = this.#lanes.get(lane)?.length ?? 0;
    let ahead = own;
    for (const [other, waiting] of this.#lanes) if (other !== lane) ahead += Math.min(waiting.length, own + 1);
    return Math.ceil((ahead + 1) / this.#running) * this.#meanMs;
  }

  /** The lane with the most waiting checks, if taking its newest would make room for one from `lane`. */
  #displaceable(lane: string): Waiter[] | null {
    const own = this.#lanes.get(lane)?.length ?? 0;
    let longest: Waiter[] | null = null;
    for (const [other, waiting] of this.#lanes)
      if (other !== lane && waiting.length > (longest?.length ?? 0)) longest = waiting;
    return longest !== null && longest.length >= own + 2 ? longest : null;
  }

  /**
   * No hasher is free, and a newcomer in `lane` would wait longer than `maxWaitMs`, or the queue is
   * at its bound and no longer lane can give up its newest check.
   */
  #full(lane: string): boolean {
    if (this.#active < this.#running) return false;
    if (this.#maxWaitMs > 0 && this.#expectedWaitMs(lane) > this.#maxWaitMs) return true;
    return this.#waitingCount >= this.#waiting && this.#displaceable(lane) === null;
  }

  async #admit<T>(task: () => Promise<T>, lane: string): Promise<T> {
    if (this.#active >= this.#running) {
      if (this.#full(lane)) throw busy();
      if (this.#waitingCount >= this.#waiting) this.#displace(lane);
      // The slot is handed over by the finishing task, so a newcomer never overtakes a waiter of its lane.
      await new Promise<void>((go, drop) => this.#enqueue(lane, { go, drop }));
    } else {
      this.#active++;
    }
    const started = this.#clock?.now() ?? 0;
    try {
      return await task();
    } finally {
      if (this.#clock !== null) {
        const took = Math.max(0, this.#clock.now() - started);
        this.#meanMs = this.#meanMs === null ? took : this.#meanMs + MEAN_WEIGHT * (took - this.#meanMs);
      }
      const next = this.#dequeue();
      if (next) next();
      else this.#active--;
    }
  }

  #enqueue(lane: string, waiter: Waiter): void {
    const waiting = this.#lanes.get(lane);
    if (waiting !== undefined) waiting.push(waiter);
    else {
      this.#lanes.set(lane, [waiter]);
      this.#turns.push(lane);
    }
    this.#waitingCount++;
  }

  /** Refuses the newest check of the longest lane, to make room for one from `lane` (see #full). */
  #displace(lane: string): void {
    const longest = this.#displaceable(lane)!;
    // The longest lane keeps at least two waiting, so it stays in the turn order.
    longest.pop()!.drop(busy());
    this.#waitingCount--;
  }

  /** The oldest check of the lane whose turn it is; the lane goes to the back if it has more. */
  #dequeue(): (() => void) | undefined {
    const lane = this.#turns.shift();
    if (lane === undefined) return undefined;
    const waiting = this.#lanes.get(lane)!;
    const next = waiting.shift()!;
    if (waiting.length > 0) this.#turns.push(lane);
    else this.#lanes.delete(lane);
    this.#waitingCount--;
    return next.go;
  }
}
