/**
 * What the two SQL adapters share: row <-> domain mappers and the literal lists their WHERE clauses
 * are built from. The schemas name their columns alike in both dialects, so a row read through
 * either drizzle driver has the same shape; only locking and SQL stay per dialect.
 */
export { albumFromRow, deviceFromRow, directoryFromRows, intentFromRow, quotaAccountFromRow, OPEN_STATE_SQL, sqlStringList } from './rows.js';
export type { AlbumRow, DeviceRow, DirectoryRow, IntentRow, QuotaAccountRow } from './rows.js';
export { Arrivals, arrivalsOf, BatchHold, BATCH_HOLD_MS } from './batch-hold.js';
