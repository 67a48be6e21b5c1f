import type Database from 'better-sqlite3';
import { BatchHold, type Arrivals } from '@strongroom/sql-common';

export interface TurnQueueOptions {
  /** At most this many items per batch; a longer queue is passed on over the following turns. */
  readonly maxBatch: number;
  /** The connection's arrivals: this queue's pushes add to it (and its hold watches it). */
  readonly arrivals?: Arrivals;
  /**
   * While other work keeps arriving, hold a batch back for at most this long (ms) before passing
   * it on, so that more items join it. 0, or no `arrivals`: pass it on at the next turn.
   */
  readonly holdMs?: number;
}

/**
 * What the group commit and the read batch share: items handed in during one turn of the event
 * loop are passed on together at the start of the next (setImmediate, after this turn's I/O
 * callbacks), at most `maxBatch` at a time.
 *
 * With a hold, a queue whose first item arrived while the process was busy waits, turn after turn,
 * for as long as new work keeps arriving on the connection (and at most `holdMs`): a commit costs
 * the same for one write as for fifty, and a loaded server has other requests to serve meanwhile.
 * An idle process passes the batch on at once, so a lone request never waits for the hold.
 */
export class TurnQueue<T> {
  #queue: T[] = [];
  #scheduled = false;
  readonly #maxBatch: number;
  readonly #hold: BatchHold;

  constructor(
    private readonly flush: (batch: T[]) => void,
    options: TurnQueueOptions,
  ) {
    this.#maxBatch = options.maxBatch;
    this.#hold = new BatchHold(options.arrivals ?? null, options.holdMs);
  }

  push(item: T): void {
    this.#hold.arrived(this.#queue.length === 0);
    this.#queue.push(item);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#drain());
    }
  }

  #drain(): void {
    if (this.#hold.holding(this.#queue.length, this.#maxBatch)) {
      setImmediate(() => this.#drain());
      return;
    }
    this.#scheduled = false;
    const batch = this.#queue.length <= this.#maxBatch ? this.#queue : this.#queue.slice(0, this.#maxBatch);
    this.#queue = batch === this.#queue ? [] : this.#queue.slice(this.#maxBatch);
    if (this.#queue.length > 0) {
      this.#scheduled = true;
      setImmediate(() => this.#drain());
    }
    this.flush(batch);
  }
}

/**
 * One `T` per connection, made on first use: the stores over a connection share its group commit
 * and its read batch, as they share its locks.
 */
export function perConnection<T>(make: (db: Database.Database) => T): (db: Database.Database) => T {
  const made = new WeakMap<Database.Database, T>();
  return (db) => {
    let one = made.get(db);
    if (one === undefined) {
      one = make(db);
      made.set(db, one);
    }
    return one;
  };
}
