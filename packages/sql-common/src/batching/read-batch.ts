import { loadOf, type HandleLoad } from './load.js';
import type { SqliteConnection } from './sqlite-connection.js';
import { perHandle, TurnQueue, type QueuedCall } from './turn-queue.js';

/**
 * Shared reads for one SQLite connection. In WAL mode every statement outside a transaction takes
 * and drops a read lock on the shared-memory index, two `fcntl` calls that cost more than the
 * lookup itself on a virtual machine. Reads handed to `run` in the same turn of the event loop are
 * executed together, at the start of the next turn, inside one read transaction, so the lock is
 * taken once per batch.
 *
 * Every read still runs after its caller asked for it, against the latest committed state at that
 * moment: a session revoked (by this process or another) before a request arrived is seen as
 * revoked. The batch runs synchronously, so nothing of this process interleaves with it, and a
 * WAL reader never waits for a writer. A read that throws fails alone; if the batch cannot even
 * begin, every read in it fails.
 */
export class ReadBatch {
  readonly #db: SqliteConnection;
  readonly #queue: TurnQueue<() => unknown>;
  readonly #begin: { run(): unknown };
  readonly #commit: { run(): unknown };
  /** Batches run inside one read transaction so far (for tests). */
  shared = 0;

  /** `load`: the connection's, whose arrivals every read adds to (the group commit's hold watches them). */
  constructor(db: SqliteConnection, options: { maxBatch?: number; load?: HandleLoad } = {}) {
    this.#db = db;
    this.#queue = new TurnQueue((batch) => this.#flush(batch), {
      maxBatch: options.maxBatch ?? 256,
      load: options.load,
    });
    this.#begin = db.prepare('BEGIN');
    this.#commit = db.prepare('COMMIT');
  }

  /** Runs `read` with the reads of the same turn; resolves with what it returned (error.server.busy when the queue is full). */
  run<T>(read: () => T): Promise<T> {
    return this.#queue.call(read) as Promise<T>;
  }

  /** Reads accepted and not yet answered. */
  get held(): number {
    return this.#queue.held;
  }

  #flush(batch: QueuedCall<() => unknown>[]): void {
    // One read gains nothing from a transaction; inside someone else's, reads simply join it.
    let own = false;
    try {
      if (batch.length > 1 && !this.#db.inTransaction) {
        this.#begin.run();
        own = true;
      }
    } catch (error) {
      // A connection that cannot even begin (closed) answers no read: each caller hears why.
      for (const p of batch) p.reject(error);
      return;
    }
    try {
      for (const p of batch) {
        try {
          p.resolve(p.work());
        } catch (error) {
          p.reject(error);
        }
      }
    } finally {
      if (own) {
        // A read-only transaction has nothing to lose at COMMIT; if it fails anyway, leave no
        // transaction open behind the batch.
        try {
          this.#commit.run();
          this.shared++;
        } catch {
          if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
        }
      }
    }
  }
}

/** The read batch of a connection: every store over it shares one, as they share its locks. */
export const readBatchOf = perHandle((db: SqliteConnection) => new ReadBatch(db, { load: loadOf(db) }));
