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
 *   arrives meanwhile can all join the next batch instead. * - With `holdMs` and the pool's `arrivals`, a batch whose first call came while the process was
 *   busy waits, turn after turn, as long as new calls keep arriving on the pool (at most `holdMs`),
 *   so that more calls share its statement, its round trip and, for a write, its commit and the
 *   WAL flush behind it. An idle process sends at the next turn, as without a hold.
 */
/** Calls handed to one pool's batches so far: a hold that sees this move knows work is still arriving. */
export class Arrivals {
  count = 0;
}

const poolArrivals = new WeakMap<object, Arrivals>();
/** The arrivals of one database handle, shared by every batch over it. */
export function arrivalsOf(db: object): Arrivals {
  let a = poolArrivals.get(db);
  if (a === undefined) poolArrivals.set(db, (a = new Arrivals()));
  return a;
}

/**
 * How long a loaded server holds a write batch for more writes to join it (ms). Each write batch
 * is its own transaction, and each commit is a WAL flush the database pays for; see the SQLite
 * adapter's WRITE_HOLD_MS for the measurement behind the figure.
 */
export const WRITE_HOLD_MS = 2;

export class StatementBatch<I, O> {
  readonly #exec: (inputs: readonly I[]) => Promise<readonly O[]>;
  readonly #maxBatch: number;
  readonly #maxInFlight: number;
  #queue: Waiting<I, O>[] = [];
  #scheduled = false;
  #inFlight = 0;
  readonly #arrivals: Arrivals | null;
  readonly #holdMs: number;
  /** When the queue's oldest call arrived, and the arrivals count at the last look. */
  #since = 0;
  #seen = 0;
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
    this.#arrivals = options.arrivals ?? null;
    this.#holdMs = options.holdMs ?? 0;
  }

  run(input: I): Promise<O> {
    if (this.#arrivals) {
      this.#arrivals.count++;
      if (this.#queue.length === 0) {
        this.#since = performance.now();
        this.#seen = this.#arrivals.count;
      }
    }
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ input, resolve, reject });
      this.#schedule();
    });
  }

  /** Hold on for another turn? Only while calls keep arriving, the batch has room, and time is left. */
  #holding(): boolean {
    const arrivals = this.#arrivals;
    if (arrivals === null || this.#holdMs <= 0) return false;
    if (arrivals.count === this.#seen || this.#queue.length >= this.#maxBatch) return false;
    if (performance.now() - this.#since >= this.#holdMs) return false;
    this.#seen = arrivals.count;
    return true;
  }

  #schedule(): void {
    if (this.#scheduled || this.#queue.length === 0 || this.#inFlight >= this.#maxInFlight) return;
    this.#scheduled = true;
    // After this turn's I/O callbacks, so every request that arrived together is in it.
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    if (this.#holding()) {
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
