import { BatchHold } from './hold.js';
import { Admission, HandleLoad } from './load.js';

export interface TurnQueueOptions {
  /** At most this many calls per batch; a longer queue is passed on over the following turns. */
  readonly maxBatch: number;
  /** The handle's load: this queue's calls count as its arrivals, and it bounds the queue. */
  readonly load?: HandleLoad;
  /**
   * While other work keeps arriving, hold a batch back for at most this long (ms) before passing
   * it on, so that more calls join it. 0: pass it on at the next turn.
   */
  readonly holdMs?: number;
}

/**
 * A call waiting in a queue: its work, and how its caller is answered. Answering it (either way)
 * gives its place in the queue back, so a queue counts a call until its caller heard the outcome.
 */
export class QueuedCall<W> {
  #open = true;
  constructor(
    readonly work: W,
    private readonly answer: (value: unknown) => void,
    private readonly refuse: (error: unknown) => void,
    private readonly admission: Admission,
  ) {}

  resolve(value: unknown): void {
    if (this.#close()) this.answer(value);
  }

  reject(error: unknown): void {
    if (this.#close()) this.refuse(error);
  }

  #close(): boolean {
    if (!this.#open) return false;
    this.#open = false;
    this.admission.release(1);
    return true;
  }
}

/**
 * What the group commit and the read batch share: calls handed in during one turn of the event
 * loop are passed on together at the start of the next (setImmediate, after this turn's I/O
 * callbacks), at most `maxBatch` at a time. A call that finds the queue holding its handle's bound
 * (see HandleLoad) is refused at once with error.server.busy.
 *
 * With a hold, a queue whose first call arrived while the process was busy waits, turn after turn,
 * for as long as new work keeps arriving on the handle (and at most `holdMs`): a commit costs the
 * same for one write as for fifty, and a loaded server has other requests to serve meanwhile.
 * An idle process passes the batch on at once, so a lone request never waits for the hold.
 */
export class TurnQueue<W> {
  #waiting: QueuedCall<W>[] = [];
  #scheduled = false;
  readonly #maxBatch: number;
  readonly #hold: BatchHold;
  readonly #admission: Admission;

  constructor(
    private readonly flush: (batch: QueuedCall<W>[]) => void,
    options: TurnQueueOptions,
  ) {
    const load = options.load ?? new HandleLoad();
    this.#maxBatch = options.maxBatch;
    this.#hold = new BatchHold(load, options.holdMs);
    this.#admission = new Admission(load);
  }

  /** Queues `work` for a coming batch; settles as the flush answers it. */
  call(work: W): Promise<unknown> {
    try {
      this.#admission.admit();
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      this.#hold.queued(this.#waiting.length === 0);
      this.#waiting.push(new QueuedCall(work, resolve, reject, this.#admission));
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#drain());
      }
    });
  }

  /** Calls accepted and not yet answered (waiting, or in a batch whose callers wait). */
  get held(): number {
    return this.#admission.held;
  }

  #drain(): void {
    if (this.#hold.holding(this.#waiting.length, this.#maxBatch)) {
      setImmediate(() => this.#drain());
      return;
    }
    this.#scheduled = false;
    const batch = this.#waiting.length <= this.#maxBatch ? this.#waiting : this.#waiting.slice(0, this.#maxBatch);
    this.#waiting = batch === this.#waiting ? [] : this.#waiting.slice(this.#maxBatch);
    if (this.#waiting.length > 0) {
      this.#scheduled = true;
      setImmediate(() => this.#drain());
    }
    this.flush(batch);
  }
}

/**
 * One `T` per database handle, made on first use: the stores over a connection share its group
 * commit and its read batch, as they share its locks.
 */
export function perHandle<H extends object, T>(make: (handle: H) => T): (handle: H) => T {
  const made = new WeakMap<H, T>();
  return (handle) => {
    let one = made.get(handle);
    if (one === undefined) {
      one = make(handle);
      made.set(handle, one);
    }
    return one;
  };
}
