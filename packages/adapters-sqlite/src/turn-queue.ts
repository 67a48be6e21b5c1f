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
