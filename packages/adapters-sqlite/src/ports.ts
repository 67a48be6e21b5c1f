import type Database from 'better-sqlite3';
import type { Ports } from '@strongroom/core';
import { boundQueues } from '@strongroom/sql-common';
import { SqliteAlbumStore } from './albums-store.js';
import { SqliteDeviceStore } from './devices-store.js';
import { SqliteQuotaStore } from './quota-store.js';
import { SqliteStore } from './store.js';
import { SqliteTotpStore } from './totp-store.js';
import { SqliteSchemaStatus } from './schema-status.js';
import { SqliteDeploymentStore, SqliteSecondFactorStore } from './second-factor-store.js';
import { SqliteOidcStore } from './oidc-store.js';
import { SqliteAttestationStore, SqliteDeprecationStore, SqliteRegistrationAllowlist } from './records-store.js';
import { SqliteLinkStore, SqliteSponsorshipStore } from './sharing-store.js';
import { SqliteDiscoveryStore } from './discovery-store.js';
import { SqliteDeploymentCensus } from './census-store.js';
import { SqliteSyncLog } from './sync-store.js';
import { SqliteAccountErasure } from './erasure-store.js';
import { SqliteSignInStore } from './sign-in-store.js';
import { SqliteUploadSegments } from './segments-store.js';

export interface SqlitePortsOptions {
  /** Calls each of the connection's batch queues may hold before it answers error.server.busy (SVC_STORE_QUEUE). */
  readonly queueBound?: number;
}

/** Every store port over one open (migrated) SQLite database. */
export function createSqlitePorts(db: Database.Database, options: SqlitePortsOptions = {}): Ports {
  if (options.queueBound !== undefined) boundQueues(db, options.queueBound);
  return {
    accounts: new SqliteStore(db),
    totp: new SqliteTotpStore(db),
    devices: new SqliteDeviceStore(db),
    albums: new SqliteAlbumStore(db),
    quota: new SqliteQuotaStore(db),
    segments: new SqliteUploadSegments(db),
    schema: new SqliteSchemaStatus(db),
    secondFactor: new SqliteSecondFactorStore(db),
    signIn: new SqliteSignInStore(db),
    deployment: new SqliteDeploymentStore(db),
    oidc: new SqliteOidcStore(db),
    deprecations: new SqliteDeprecationStore(db),
    attestation: new SqliteAttestationStore(db),
    sponsorship: new SqliteSponsorshipStore(db),
    links: new SqliteLinkStore(db),
    discovery: new SqliteDiscoveryStore(db),
    registration: new SqliteRegistrationAllowlist(db),
    census: new SqliteDeploymentCensus(db),
    sync: new SqliteSyncLog(db),
    erasure: new SqliteAccountErasure(db),
  };
}
