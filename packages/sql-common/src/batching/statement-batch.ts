import { BatchHold } from './hold.js';
import { Admission, HandleLoad } from './load.js';

/**
 * One statement for the calls of one turn of the event loop. On PostgreSQL each statement is a round
 * trip: a write to the socket, a wake-up of the backend, a reply to parse. Under load most of a hot
 * read was that, not the lookup. Calls to `run` in the same turn are handed to `exec` together, as
 * one list, and each caller gets its own answer back.
 *
 * - A batch starts only after every call in it was made, so a read in it sees everything committed
 *   before its caller asked: a session revoked before the request arrived is read as revoked.
 *   A call made while a batch is in flight waits for the next one; it never joins a statement that
 *   was already sent.
 * - `exec` fails, every caller of that batch gets the error (fail closed, nothing half-answered).
 * - At most `maxBatch` calls per statement; a longer queue is split.
 * - At most `maxInFlight` batches at once (unlimited by default). A batch that holds row locks
 *   until its COMMIT runs alone: a second one for the same rows would only wait, while what
 *   arrives meanwhile can all join the next batch instead.
 * - At most the handle's `queueBound` calls waiting or in flight (see HandleLoad); one more is
 *   refused at once with error.server.busy, before any statement ran for it.
 * - With `holdMs` and the handle's `load`, a batch whose first call came while the process was
 *   busy waits, turn after turn, as long as new calls keep arriving on it (at most `holdMs`),
 *   so that more calls share its statement, its round trip and, for a write, its commit and the
 *   WAL flush behind it. An idle process sends at the next turn, as without a hold.
 */
export class StatementBatch<I, O> {
  readonly #exec: (inputs: readonly I[]) => Promise<readonly O[]>;
  readonly #maxBatch: number;
  readonly #maxInFlight: number;
  #queue: Waiting<I, O>[] = [];
  #scheduled = false;
  #inFlight = 0;
  readonly #hold: BatchHold;
  readonly #admission: Admission;
  /** Statements run so far (for tests). */
  statements = 0;

  /** `exec` answers `inputs[i]` with `outputs[i]`, for every i. */
  constructor(
    exec: (inputs: readonly I[]) => Promise<readonly O[]>,
    options: { maxBatch?: number; maxInFlight?: number; load?: HandleLoad; holdMs?: number } = {},
  ) {
    const load = options.load ?? new HandleLoad();
    this.#exec = exec;
    this.#maxBatch = options.maxBatch ?? 256;
    this.#maxInFlight = options.maxInFlight ?? Infinity;
    this.#hold = new BatchHold(load, options.holdMs);
    this.#admission = new Admission(load);
  }

  /** `input`'s answer, from the next statement; refused at once with error.server.busy when full. */
  run(input: I): Promise<O> {
    try {
      this.#admission.admit();
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<O>((resolve, reject) => {
      this.#hold.queued(this.#queue.length === 0);
      this.#queue.push({ input, resolve, reject });
      this.#schedule();
    });
  }

  /** Calls accepted and not yet answered (waiting, or in a statement in flight). */
  get held(): number {
    return this.#admission.held;
  }

  #schedule(): void {
    if (this.#scheduled || this.#queue.length === 0 || this.#inFlight >= this.#maxInFlight) return;
    this.#scheduled = true;
    // After this turn's I/O callbacks, so every request that arrived together is in it.
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    if (this.#hold.holding(this.#queue.length, this.#maxBatch)) {
      setImmediate(() => this.#flush());
      return;
    }
    this.#scheduled = false;
    while (this.#queue.length > 0 && this.#inFlight < this.#maxInFlight) {
      const batch = this.#queue.splice(0, this.#maxBatch);
      this.statements++;
      this.#inFlight++;
      this.#send(batch);
    }
  }

  #send(batch: Waiting<I, O>[]): void {
    let sent: Promise<readonly O[]>;
    try {
      sent = this.#exec(batch.map((w) => w.input));
    } catch (error) {
      sent = Promise.reject(error);
    }
    // The batch's places in the queue are given back before its callers hear, so a caller that
    // asks again at once finds them free.
    const settled = sent.then(
      (outputs) => {
        this.#admission.release(batch.length);
        if (outputs.length !== batch.length) {
          const error = new Error(`a batched statement answered ${outputs.length} of ${batch.length} calls`);
          for (const w of batch) w.reject(error);
          return;
        }
        batch.forEach((w, i) => w.resolve(outputs[i]!));
      },
      (error: unknown) => {
        this.#admission.release(batch.length);
        for (const w of batch) w.reject(error);
      },
    );
    void settled.finally(() => {
      this.#inFlight--;
      this.#schedule();
    });
  }
}

interface Waiting<I, O> {
  readonly input: I;
  resolve(output: O): void;
  reject(error: unknown): void;
}

/** Keys of a batch without repeats, for a statement that looks each up once (`= ANY($1)`). */
export function distinct<K>(keys: readonly K[]): K[] {
  return [...new Set(keys)];
}
