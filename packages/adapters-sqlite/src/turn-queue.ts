import type Database from 'better-sqlite3';

/**
 * What the group commit and the read batch share: items handed in during one turn of the event
 * loop are passed on together at the start of the next (setImmediate, after this turn's I/O
 * callbacks), at most `maxBatch` at a time; a longer queue is passed on over the following turns.
 */
export class TurnQueue<T> {
  #queue: T[] = [];
  #scheduled = false;

  constructor(
    private readonly flush: (batch: T[]) => void,
    private readonly maxBatch: number,
  ) {}

  push(item: T): void {
    this.#queue.push(item);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#drain());
    }
  }

  #drain(): void {
    this.#scheduled = false;
    const batch = this.#queue.length <= this.maxBatch ? this.#queue : this.#queue.slice(0, this.maxBatch);
    this.#queue = batch === this.#queue ? [] : this.#queue.slice(this.maxBatch);
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
