/**
 * What the two SQL adapters share:
 * - the row <-> domain mappers and the literal lists their WHERE clauses are built from (rows.ts):
 *   the schemas name their columns alike in both dialects, so a row read through either drizzle
 *   driver has the same shape; only locking and SQL stay per dialect;
 * - the batching layer (batching/): the queues that let concurrent requests share statements,
 *   commits and fsyncs, their holds, and the bound past which they shed load. Its header has the
 *   diagram.
 */
export {
  accountFromRow,
  addressGuessFromJson,
  albumFromRow,
  signInAddressCountKey,
  signInSourceCountKey,
  sourceFailuresFromJson,
  deviceFromRow,
  directoryFromRows,
  intentFromRow,
  quotaAccountFromRow,
  OPEN_STATE_SQL,
  sqlStringList,
} from './rows.js';
export type { AlbumRow, DeviceRow, DirectoryRow, IntentRow, QuotaAccountRow } from './rows.js';
export { columnOf, filterSql, filterWhere } from './filters.js';
export {
  Admission,
  BATCH_HOLD_MS,
  BatchHold,
  boundQueues,
  DEFAULT_QUEUE_BOUND,
  distinct,
  GroupCommit,
  groupCommitOf,
  HandleLoad,
  loadOf,
  perHandle,
  QueuedCall,
  queueFull,
  ReadBatch,
  readBatchOf,
  StatementBatch,
  TurnQueue,
} from './batching/index.js';
export type { GroupCommitOptions, SqliteConnection, TurnQueueOptions } from './batching/index.js';
