import { describePortContracts } from '@strongroom/port-contracts';
import { openSqliteDatabase } from './migrate.js';
import { SqliteStore } from './store.js';
import { SqliteTotpStore } from './totp-store.js';
import { SqliteAlbumStore } from './albums-store.js';
import { SqliteDeviceStore } from './devices-store.js';
import { SqliteQuotaStore } from './quota-store.js';

describePortContracts('sqlite', async () => {
  const db = openSqliteDatabase(':memory:');
  return { ports: { accounts: new SqliteStore(db), totp: new SqliteTotpStore(db), devices: new SqliteDeviceStore(db), albums: new SqliteAlbumStore(db), quota: new SqliteQuotaStore(db) }, cleanup: () => void db.close() };
});
