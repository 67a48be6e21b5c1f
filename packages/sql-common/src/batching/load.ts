import { CoreError } from '@strongroom/core';

/**
 * Calls one queue may hold, accepted and not yet answered, unless the deployment sets
 * SVC_STORE_QUEUE. A loaded server answers a batch within a few milliseconds, so a queue this long
 * means its callers already wait longer than a client that retries after a second would.
 */
export const DEFAULT_QUEUE_BOUND = 1024;

/**
 * What every queue over one database handle (a SQLite connection, a PostgreSQL database) shares.
 * `arrivals` counts the calls handed to any of them: a hold that sees it move knows requests are
 * still coming in. `queueBound` is how many calls each of them may hold before it refuses the
 * next one: a queue is never longer, so memory under overload stays bounded.
 */
export class HandleLoad {
  arrivals = 0;
  queueBound = DEFAULT_QUEUE_BOUND;
}

const loads = new WeakMap<object, HandleLoad>();
/** The load of one database handle, shared by every queue over it. */
export function loadOf(handle: object): HandleLoad {
  let load = loads.get(handle);
  if (load === undefined) loads.set(handle, (load = new HandleLoad()));
  return load;
}

/** Sets how many calls each queue over `handle` may hold (SVC_STORE_QUEUE), at least one. */
export function boundQueues(handle: object, queueBound: number): void {
  loadOf(handle).queueBound = Math.max(1, Math.floor(queueBound));
}

/**
 * The refusal of a call that finds its queue full: core's `error.server.busy`, which the server
 * answers 503 with Retry-After. It is thrown before the call's statement ran, so nothing of it
 * was read or written.
 */
export function queueFull(): CoreError {
  return new CoreError(
    'error.server.busy',
    'The server has more work waiting than it takes on; try again in a second.',
  );
}

/**
 * One queue's count of the calls it holds, from the moment it accepts one until its caller is
 * answered, against its handle's bound.
 */
export class Admission {
  #held = 0;
  constructor(private readonly load: HandleLoad) {}

  /** Takes one call in, counting it as an arrival; throws {@link queueFull} when the queue is full. */
  admit(): void {
    if (this.#held >= this.load.queueBound) throw queueFull();
    this.#held++;
    this.load.arrivals++;
  }

  /** `n` calls were answered (or failed): room for as many more. */
  release(n: number): void {
    this.#held -= n;
  }

  /** Calls held now. */
  get held(): number {
    return this.#held;
  }
}
