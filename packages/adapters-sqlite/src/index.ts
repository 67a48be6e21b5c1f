/** SQLite adapters (drizzle-orm + better-sqlite3): the embedded default store. */
export { SqliteStore } from './store.js';
export { SqliteTotpStore } from './totp-store.js';
export { openSqliteDatabase, buildSchemaVersion, SchemaVersionError, MIGRATIONS_FOLDER } from './migrate.js';
export * as sqliteSchema from './schema/index.js';
export { SqliteQuotaStore } from './quota-store.js';
export { SqliteDeviceStore } from './devices-store.js';
export { SqliteAlbumStore } from './albums-store.js';
export { SqliteCatalog, openCatalog } from './catalog.js';
export { createSqlitePorts, type SqlitePortsOptions } from './ports.js';
export { SqliteSchemaStatus } from './schema-status.js';
export { snapshotSqliteDatabase, SqliteBackupReader } from './backup.js';
export { SqliteOidcStore } from './oidc-store.js';
export { SqliteDeprecationStore, SqliteAttestationStore } from './records-store.js';
export { SqliteLinkStore, SqliteSponsorshipStore } from './sharing-store.js';
export { SqliteDiscoveryStore } from './discovery-store.js';
export { SqliteSignInStore } from './sign-in-store.js';
/**
 * The per-connection read batch and group commit the stores share: for code that reads or writes
 * the same connection beside them (the bench's floor server uses them to measure what the
 * machine allows).
 */
export {
  DEFAULT_QUEUE_BOUND,
  groupCommitOf,
  readBatchOf,
  type GroupCommit,
  type ReadBatch,
} from '@strongroom/sql-common';
