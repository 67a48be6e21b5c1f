import type { Ports } from '@strongroom/core';
import { PgAlbumStore } from './albums-store.js';
import type { PgDb } from './db.js';
import { PgDeviceStore } from './devices-store.js';
import { PgQuotaStore } from './quota-store.js';
import { PgStore } from './store.js';
import { PgTotpStore } from './totp-store.js';
import { PgDiscoveryStore } from './discovery-store.js';

/** Every store port over one migrated PostgreSQL database (node-postgres pool or PGlite). */
export function createPgPorts(db: PgDb): Ports {
  return { accounts: new PgStore(db), totp: new PgTotpStore(db), devices: new PgDeviceStore(db), albums: new PgAlbumStore(db), quota: new PgQuotaStore(db), discovery: new PgDiscoveryStore(db) };
}
