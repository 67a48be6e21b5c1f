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
 * - At most `maxBatch` calls per statement; a longer queue is split and the batches run side by side.
 */
export class StatementBatch<I, O> {
  readonly #exec: (inputs: readonly I[]) => Promise<readonly O[]>;
  readonly #maxBatch: number;
  #queue: Waiting<I, O>[] = [];
  #scheduled = false;
  /** Statements run so far (for tests). */
  statements = 0;

  /** `exec` answers `inputs[i]` with `outputs[i]`, for every i. */
  constructor(exec: (inputs: readonly I[]) => Promise<readonly O[]>, options: { maxBatch?: number } = {}) {
    this.#exec = exec;
    this.#maxBatch = options.maxBatch ?? 256;
  }

  run(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ input, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // After this turn's I/O callbacks, so every request that arrived together is in it.
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#maxBatch);
      this.statements++;
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
    sent.then(
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
