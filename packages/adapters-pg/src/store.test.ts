import { afterAll, beforeAll } from 'vitest';
import { describePortContracts } from '@strongroom/port-contracts';
import { PgStore } from './store.js';
import { PgTotpStore } from './totp-store.js';
import { PgDeviceStore } from './devices-store.js';
import { PgAlbumStore } from './albums-store.js';
import { PgQuotaStore } from './quota-store.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

// One migrated database per file (PG_URL scratch database or PGlite), emptied before every test.
let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
  console.info(`adapters-pg contract suite on ${t.kind}`);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describePortContracts('pg', async () => {
  await t.reset();
  const { db } = t;
  return {
    ports: {
      accounts: new PgStore(db),
      totp: new PgTotpStore(db),
      devices: new PgDeviceStore(db),
      albums: new PgAlbumStore(db),
      quota: new PgQuotaStore(db),
    },
  };
});
