/**
 * The batching layer: how the stores' hot calls of many concurrent requests share one statement,
 * one transaction, one commit and one fsync, and how far they may pile up.
 *
 * ```text
 *   requests ──► store methods (adapters-sqlite, adapters-pg)
 *                    │ run(call)
 *                    ▼
 *   WHO QUEUES   Admission ── full (queueBound calls held)? ──► error.server.busy ──► 503 + Retry-After
 *                    │ admitted: counted in HandleLoad.arrivals until its caller is answered
 *                    ▼
 *        SQLite connection                          PostgreSQL database (pool)
 *        ┌──────────────┬───────────────┐           ┌───────────────────────────────┐
 *        │ ReadBatch    │ GroupCommit   │           │ StatementBatch, one per hot    │
 *        │  TurnQueue   │  TurnQueue    │           │ statement (reads; writes with  │
 *        └──────┬───────┴──────┬────────┘           │ one batch in flight)           │
 *               │              │                    └──────────────┬────────────────┘
 *   WHO HOLDS   BatchHold: while HandleLoad.arrivals keeps moving, a batch waits another turn
 *               (GroupCommit and PostgreSQL's batches, at most BATCH_HOLD_MS; ReadBatch never)
 *               │              │                                   │
 *   WHO COMMITS ▼              ▼                                   ▼
 *        one read          BEGIN IMMEDIATE, a savepoint     exec(inputs): one statement (a
 *        transaction       per write, COMMIT; then the      write group: one transaction)
 *        (nothing to       WAL fsync; callers answered      answers every call of the batch
 *        commit)           only once it returned; what
 *                          arrives meanwhile commits
 *                          after it
 * ```
 *
 * - Every queue over one handle shares its {@link HandleLoad}: the arrivals a hold watches, and
 *   the bound (SVC_STORE_QUEUE, {@link DEFAULT_QUEUE_BOUND}) each queue applies to the calls it
 *   holds, from the moment it accepts one until its caller heard the outcome (a write committed
 *   but not yet synced still counts). Past it a call is refused before anything of it ran.
 * - A batch starts only after every call in it was made, so a read sees everything committed
 *   before its caller asked; nothing is acknowledged before it is durable.
 * - The SQLite pieces take any object shaped like a better-sqlite3 connection
 *   ({@link SqliteConnection}), so this package needs no driver.
 */
export { BatchHold, BATCH_HOLD_MS } from './hold.js';
export { Admission, boundQueues, DEFAULT_QUEUE_BOUND, HandleLoad, loadOf, queueFull } from './load.js';
export { perHandle, QueuedCall, TurnQueue, type TurnQueueOptions } from './turn-queue.js';
export { distinct, StatementBatch } from './statement-batch.js';
export { ReadBatch, readBatchOf } from './read-batch.js';
export { GroupCommit, groupCommitOf, type GroupCommitOptions } from './group-commit.js';
export type { SqliteConnection } from './sqlite-connection.js';
