/**
 * PostgreSQL adapters (drizzle-orm over node-postgres): the store for several server processes over
 * one database. Stores take any drizzle PostgreSQL database, so tests run them on PGlite as well.
 */
export type { PgDb, NamedTransaction } from './db.js';
export { namedRowsOf, namedTransaction } from './db.js';
export { PgStore } from './store.js';
export { PgTotpStore } from './totp-store.js';
export { PgDeviceStore } from './devices-store.js';
export { PgAlbumStore } from './albums-store.js';
export { PgQuotaStore } from './quota-store.js';
export { CONNECTION_SETTINGS, openPgDatabase, SessionFreeClient } from './open.js';
export type { OpenPgDatabase, PgDatabaseOptions, Pooler } from './open.js';
export {
  bringSchemaForward,
  buildSchemaVersion,
  databaseSchemaVersion,
  SchemaVersionError,
  MIGRATIONS_FOLDER,
} from './migrate.js';
export * as pgSchema from './schema/index.js';
export { createPgPorts, type PgPortsOptions } from './ports.js';
export { PgSchemaStatus } from './schema-status.js';
export { PgOidcStore } from './oidc-store.js';
export { PgDeprecationStore, PgAttestationStore } from './records-store.js';
export { PgLinkStore, PgSponsorshipStore } from './sharing-store.js';
export { PgDiscoveryStore } from './discovery-store.js';
export { PgSignInStore } from './sign-in-store.js';
/** One statement for the calls of a turn, as the stores batch their hot reads and writes (the bench's floor server uses it too). */
export { StatementBatch } from '@strongroom/sql-common';
export { readPgLedgerForBackup, withPgBackupSnapshot } from './backup.js';
