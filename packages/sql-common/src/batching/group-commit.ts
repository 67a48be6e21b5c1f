import { closeSync, fsync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { BATCH_HOLD_MS } from './hold.js';
import { loadOf, type HandleLoad } from './load.js';
import type { SqliteConnection } from './sqlite-connection.js';
import { perHandle, TurnQueue, type QueuedCall } from './turn-queue.js';

/**
 * Group commit for one SQLite connection. With `synchronous = FULL` every COMMIT waits for an
 * fsync of the WAL, and that wait, not the statements, was most of a hot write (a refresh, an
 * upload session). Writes handed to `run` in the same turn of the event loop are applied one after
 * another in a single transaction, each inside its own savepoint, and committed with one fsync.
 * With `holdMs` and the connection's `load`, a batch that starts while other reads and writes
 * keep arriving is held over a few turns (see TurnQueue) so that more writes share the commit.
 * A write that finds the queue full (the connection's `queueBound` writes accepted and not yet
 * answered, committed-but-unsynced ones included) is refused at once with error.server.busy and
 * never runs.
 * Each caller's promise settles only after that COMMIT returned, so nothing is acknowledged before
 * it is on disk, exactly as with a transaction of its own.
 *
 * - A write that throws is rolled back to its savepoint alone; the others still commit.
 * - A COMMIT that fails (full disk, a deferred constraint) rolls the whole batch back and every
 *   caller in it gets the error: nothing of the batch was kept.
 * - The batch runs synchronously from BEGIN to COMMIT, so no other statement of this process
 *   interleaves with it; a nested `db.transaction(...)` inside a write becomes a savepoint.
 *
 * The fsync itself runs off the event loop. On a file database in WAL mode the batch commits with
 * `synchronous = NORMAL` (the WAL is written but not synced), then the WAL file is fsynced on
 * libuv's pool, and only when that returns are the callers answered. The connection goes back to
 * FULL at once, so every write outside the group still syncs in its own COMMIT. The WAL is one
 * file written in commit order, so an fsync that covers a batch covers everything committed before
 * it: an acknowledged write never depends on one that could still be lost. Batches handed on
 * while an fsync is running wait for it and then commit together, sharing the next one (held
 * calls still count against the queue bound). Between COMMIT and the fsync, other requests of
 * this process can read the batch before its authors are answered (a power cut in that window
 * loses writes nobody was told succeeded). A failed fsync rejects its callers and stops the group:
 * after such a failure the kernel may have dropped the dirty pages, so no later write is
 * acknowledged until the process restarts. It also tells whoever listens ({@link onBroken}): the
 * server then answers 503 to everything, /readyz included, and exits non-zero so that a supervisor
 * restarts it and SQLite recovers from its log (spec §17.7).
 */
export class GroupCommit {
  readonly #db: SqliteConnection;
  readonly #queue: TurnQueue<() => unknown>;
  readonly #maxBatch: number;
  /** Committed but not yet synced; answered when the next fsync returns. */
  #unsynced: Settle[] = [];
  #syncing = false;
  /** Writes handed on while an fsync ran: committed together, in arrival order, once it returns. */
  #parked: QueuedCall<() => unknown>[] = [];
  #broken: unknown = null;
  readonly #wal: WalSync | null;
  readonly #relaxed: Statement | null;
  readonly #strict: Statement | null;
  readonly #begin: Statement;
  readonly #commit: Statement;
  readonly #rollback: Statement;
  readonly #savepoint: Statement;
  readonly #release: Statement;
  readonly #undo: Statement;
  readonly #onBroken: ((error: unknown) => void)[] = [];
  /** Batches committed so far (for tests and the bench's curiosity). */
  commits = 0;

  /** fsyncs run so far (for tests and the bench's curiosity). */
  syncs = 0;

  constructor(db: SqliteConnection, options: GroupCommitOptions = {}) {
    this.#db = db;
    // After this turn's I/O callbacks: every request that arrived together joins the batch.
    this.#maxBatch = options.maxBatch ?? 512;
    this.#queue = new TurnQueue((batch) => this.#flush(batch), {
      maxBatch: this.#maxBatch,
      load: options.load,
      holdMs: options.holdMs,
    });
    // Only a connection that syncs at COMMIT (FULL or EXTRA) has an fsync worth moving; whatever it
    // was set to is what it goes back to after each batch.
    const level = Number(db.pragma('synchronous', { simple: true }));
    this.#wal = level >= 2 ? walOf(db, options.sync) : null;
    this.#relaxed = this.#wal ? db.prepare('PRAGMA synchronous = NORMAL') : null;
    this.#strict = this.#wal ? db.prepare(`PRAGMA synchronous = ${level}`) : null;
    // IMMEDIATE: take the write lock at BEGIN, so another process's writer makes us wait (busy
    // timeout) before any write ran, never in the middle of the batch.
    this.#begin = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#rollback = db.prepare('ROLLBACK');
    this.#savepoint = db.prepare('SAVEPOINT group_write');
    this.#release = db.prepare('RELEASE group_write');
    this.#undo = db.prepare('ROLLBACK TO group_write');
  }

  /**
   * The failed fsync that stopped this group, or null. Once set it stays: the kernel may have
   * dropped the dirty pages, so only a restart (SQLite recovering from its log) makes writes safe.
   */
  get broken(): unknown {
    return this.#broken;
  }

  /** Calls `listener` once when an fsync fails (at once if one already has): the process must stop. */
  onBroken(listener: (error: unknown) => void): void {
    if (this.#broken !== null) listener(this.#broken);
    else this.#onBroken.push(listener);
  }

  /**
   * Applies `write` in the next batch; resolves with its result once the batch is durable. Refused
   * at once, without running, when the group is broken or its queue is full (error.server.busy).
   */
  run<T>(write: () => T): Promise<T> {
    if (this.#broken !== null) return Promise.reject(this.#broken);
    return this.#queue.call(write) as Promise<T>;
  }

  /** Writes accepted and not yet answered (queued, or committed and waiting for their fsync). */
  get held(): number {
    return this.#queue.held;
  }

  #flush(batch: QueuedCall<() => unknown>[]): void {
    if (this.#syncing) {
      // Not while the WAL is being synced: a write into the pages the kernel is writing back for
      // the fsync waits for that I/O, on the event loop, and every commit adds frames of its own.
      // Whatever arrives during the fsync commits when it returns, and shares the next one.
      for (const p of batch) this.#parked.push(p);
      return;
    }
    this.#commitBatch(batch);
    this.#syncWal();
  }

  #commitBatch(batch: QueuedCall<() => unknown>[]): void {
    if (this.#db.inTransaction) {
      // Only if someone left a transaction open on this connection: fall back to one at a time
      // inside it rather than fail (each write is still a savepoint of that transaction).
      for (const p of batch) this.#settleOne(p);
      return;
    }
    const outcomes: Outcome[] = [];
    try {
      this.#relaxed?.run();
      this.#begin.run();
      for (const p of batch) {
        this.#savepoint.run();
        try {
          outcomes.push({ ok: true, value: p.work() });
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
    } finally {
      if (!this.#db.inTransaction) this.#strict?.run();
    }
    const settle = () =>
      batch.forEach((p, i) => {
        const o = outcomes[i]!;
        if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
    if (!this.#wal) return settle();
    // Answered once the next fsync returned (the caller starts it).
    this.#unsynced.push({ settle, reject: (error) => batch.forEach((p) => p.reject(error)) });
  }

  /** One fsync at a time; the writes that arrived while it ran commit after it, then sync in the next. */
  #syncWal(): void {
    if (this.#syncing || this.#unsynced.length === 0) return;
    const covered = this.#unsynced;
    this.#unsynced = [];
    this.#syncing = true;
    this.#wal!.sync((error) => {
      this.#syncing = false;
      this.syncs++;
      if (error) {
        const first = this.#broken === null;
        this.#broken ??= error;
        for (const s of [...covered, ...this.#unsynced]) s.reject(this.#broken);
        this.#unsynced = [];
        // Never run: nothing of them was written.
        for (const p of this.#parked.splice(0)) p.reject(this.#broken);
        if (first) for (const listener of this.#onBroken.splice(0)) listener(this.#broken);
        return;
      }
      for (const s of covered) s.settle();
      // What waited commits now, at most maxBatch writes per transaction, and shares one fsync.
      const waited = this.#parked;
      this.#parked = [];
      for (let i = 0; i < waited.length; i += this.#maxBatch) this.#commitBatch(waited.slice(i, i + this.#maxBatch));
      this.#syncWal();
    });
  }

  #settleOne(p: QueuedCall<() => unknown>): void {
    try {
      p.resolve(this.#db.transaction(p.work)());
    } catch (error) {
      p.reject(error);
    }
  }
}

export interface GroupCommitOptions {
  maxBatch?: number;
  /** The connection's load: its arrivals (while they keep coming, a batch is held) and its queue bound. */
  load?: HandleLoad;
  /** How long a batch may be held for more writes to join it, in ms (0: commit at the next turn). */
  holdMs?: number;
  /** Replaces the WAL fsync (tests: to hold it, or make it fail). Called with the WAL's path. */
  sync?: (walPath: string, done: (error: Error | null) => void) => void;
}

interface Settle {
  settle: () => void;
  reject: (error: unknown) => void;
}

interface WalSync {
  sync(done: (error: Error | null) => void): void;
}

/**
 * The WAL fsync for a file database in WAL mode, or null (memory, or another journal mode: those
 * keep syncing in COMMIT). The file is opened once; the first open also syncs its directory, as
 * SQLite does for a journal it creates, so the WAL's name survives a power cut too.
 */
function walOf(db: SqliteConnection, override: GroupCommitOptions['sync']): WalSync | null {
  if (db.memory || db.readonly) return null;
  const mode = String(db.pragma('journal_mode', { simple: true })).toLowerCase();
  if (mode !== 'wal') return null;
  const walPath = `${db.name}-wal`;
  if (override) return { sync: (done) => override(walPath, done) };
  let fd: number | null = null;
  return {
    sync(done) {
      try {
        if (fd === null) {
          fd = openSync(walPath, 'r+');
          const dir = openSync(dirname(walPath), 'r');
          try {
            fsyncSync(dir);
          } finally {
            closeSync(dir);
          }
        }
      } catch (error) {
        done(error as Error);
        return;
      }
      fsync(fd, (error) => done(error));
    },
  };
}

interface Statement {
  run(): unknown;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** The one group commit of a connection (every store on it must share it to share the fsync). */
export const groupCommitOf = perHandle(
  (db: SqliteConnection) => new GroupCommit(db, { load: loadOf(db), holdMs: BATCH_HOLD_MS }),
);
