import type { Ports } from '@strongroom/core';
import { boundQueues } from '@strongroom/sql-common';
import { PgAlbumStore } from './albums-store.js';
import type { PgDb } from './db.js';
import { PgDeviceStore } from './devices-store.js';
import { PgQuotaStore } from './quota-store.js';
import { PgStore } from './store.js';
import { PgTotpStore } from './totp-store.js';
import { PgSchemaStatus } from './schema-status.js';
import { PgDeploymentStore, PgSecondFactorStore } from './second-factor-store.js';
import { PgOidcStore } from './oidc-store.js';
import { PgAttestationStore, PgDeprecationStore, PgRegistrationAllowlist } from './records-store.js';
import { PgLinkStore, PgSponsorshipStore } from './sharing-store.js';
import { PgDiscoveryStore } from './discovery-store.js';
import { PgDeploymentCensus } from './census-store.js';
import { PgSyncLog } from './sync-store.js';
import { PgAccountErasure } from './erasure-store.js';
import { PgSignInStore } from './sign-in-store.js';
import { PgUploadSegments } from './segments-store.js';

export interface PgPortsOptions {
  /** Calls each of the database's batch queues may hold before it answers error.server.busy (SVC_STORE_QUEUE). */
  readonly queueBound?: number;
}

/** Every store port over one migrated PostgreSQL database (node-postgres pool or PGlite). */
export function createPgPorts(db: PgDb, options: PgPortsOptions = {}): Ports {
  if (options.queueBound !== undefined) boundQueues(db, options.queueBound);
  return {
    accounts: new PgStore(db),
    totp: new PgTotpStore(db),
    devices: new PgDeviceStore(db),
    albums: new PgAlbumStore(db),
    quota: new PgQuotaStore(db),
    segments: new PgUploadSegments(db),
    schema: new PgSchemaStatus(db),
    secondFactor: new PgSecondFactorStore(db),
    signIn: new PgSignInStore(db),
    deployment: new PgDeploymentStore(db),
    oidc: new PgOidcStore(db),
    deprecations: new PgDeprecationStore(db),
    attestation: new PgAttestationStore(db),
    sponsorship: new PgSponsorshipStore(db),
    links: new PgLinkStore(db),
    discovery: new PgDiscoveryStore(db),
    registration: new PgRegistrationAllowlist(db),
    census: new PgDeploymentCensus(db),
    sync: new PgSyncLog(db),
    erasure: new PgAccountErasure(db),
  };
}
