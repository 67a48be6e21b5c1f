import type Database from 'better-sqlite3';

/**
 * Group commit for one SQLite connection. With `synchronous = FULL` every COMMIT waits for an
 * fsync of the WAL, and that wait, not the statements, was most of a hot write (a refresh, an
 * upload session). Writes handed to `run` in the same turn of the event loop are applied one after
 * another in a single transaction, each inside its own savepoint, and committed with one fsync.
 * Each caller's promise settles only after that COMMIT returned, so nothing is acknowledged before
 * it is on disk, exactly as with a transaction of its own.
 *
 * - A write that throws is rolled back to its savepoint alone; the others still commit.
 * - A COMMIT that fails (full disk, a deferred constraint) rolls the whole batch back and every
 *   caller in it gets the error: nothing of the batch was kept.
 * - The batch runs synchronously from BEGIN to COMMIT, so no other statement of this process
 *   interleaves with it; a nested `db.transaction(...)` inside a write becomes a savepoint.
 */
export class GroupCommit {
  readonly #db: Database.Database;
  readonly #maxBatch: number;
  #queue: Pending[] = [];
  #scheduled = false;
  readonly #begin: Database.Statement;
  readonly #commit: Database.Statement;
  readonly #rollback: Database.Statement;
  readonly #savepoint: Database.Statement;
  readonly #release: Database.Statement;
  readonly #undo: Database.Statement;
  /** Batches committed so far (for tests and the bench's curiosity). */
  commits = 0;

  constructor(db: Database.Database, options: { maxBatch?: number } = {}) {
    this.#db = db;
    this.#maxBatch = options.maxBatch ?? 512;
    // IMMEDIATE: take the write lock at BEGIN, so another process's writer makes us wait (busy
    // timeout) before any write ran, never in the middle of the batch.
    this.#begin = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#rollback = db.prepare('ROLLBACK');
    this.#savepoint = db.prepare('SAVEPOINT group_write');
    this.#release = db.prepare('RELEASE group_write');
    this.#undo = db.prepare('ROLLBACK TO group_write');
  }

  /** Applies `write` in the next batch; resolves with its result once the batch is durable. */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // After this turn's I/O callbacks: every request that arrived together joins the batch.
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#queue.splice(0, this.#maxBatch);
    if (this.#queue.length > 0) {
      this.#scheduled = true;
      setImmediate(() => this.#flush());
    }
    if (this.#db.inTransaction) {
      // Only if someone left a transaction open on this connection: fall back to one at a time
      // inside it rather than fail (each write is still a savepoint of that transaction).
      for (const p of batch) this.#settleOne(p);
      return;
    }
    const outcomes: Outcome[] = [];
    try {
      this.#begin.run();
      for (const p of batch) {
        this.#savepoint.run();
        try {
          outcomes.push({ ok: true, value: p.write() });
          this.#release.run();
        } catch (error) {
          this.#undo.run();
          this.#release.run();
          outcomes.push({ ok: false, error });
        }
      }
      this.#commit.run();
      this.commits++;
    } catch (error) {
      // BEGIN or COMMIT failed: nothing of this batch is kept, and every caller hears so.
      if (this.#db.inTransaction) this.#rollback.run();
      for (const p of batch) p.reject(error);
      return;
    }
    batch.forEach((p, i) => {
      const o = outcomes[i]!;
      if (o.ok) p.resolve(o.value);
      else p.reject(o.error);
    });
  }

  #settleOne(p: Pending): void {
    try {
      p.resolve(this.#db.transaction(p.write)());
    } catch (error) {
      p.reject(error);
    }
  }
}

interface Pending {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

const perConnection = new WeakMap<Database.Database, GroupCommit>();

/** The one group commit of a connection (every store on it must share it to share the fsync). */
export function groupCommitOf(db: Database.Database): GroupCommit {
  let g = perConnection.get(db);
  if (!g) {
    g = new GroupCommit(db);
    perConnection.set(db, g);
  }
  return g;
}
