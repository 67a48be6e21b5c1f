import { BatchHold, type Arrivals } from '@strongroom/sql-common';

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
 * - With `holdMs` and the pool's `arrivals`, a batch whose first call came while the process was
 *   busy waits, turn after turn, as long as new calls keep arriving on the pool (at most `holdMs`),
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
  /** Statements run so far (for tests). */
  statements = 0;

  /** `exec` answers `inputs[i]` with `outputs[i]`, for every i. */
  constructor(
    exec: (inputs: readonly I[]) => Promise<readonly O[]>,
    options: { maxBatch?: number; maxInFlight?: number; arrivals?: Arrivals; holdMs?: number } = {},
  ) {
    this.#exec = exec;
    this.#maxBatch = options.maxBatch ?? 256;
    this.#maxInFlight = options.maxInFlight ?? Infinity;
    this.#hold = new BatchHold(options.arrivals ?? null, options.holdMs);
  }

  run(input: I): Promise<O> {
    this.#hold.arrived(this.#queue.length === 0);
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ input, resolve, reject });
      this.#schedule();
    });
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
    const settled = sent.then(
      (outputs) => {
        if (outputs.length !== batch.length) {
          const error = new Error(`a batched statement answered ${outputs.length} of ${batch.length} calls`);
          for (const w of batch) w.reject(error);
          return;
        }
        batch.forEach((w, i) => w.resolve(outputs[i]!));
      },
      (error: unknown) => {
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
