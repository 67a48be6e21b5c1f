import { describePortContracts } from '@strongroom/port-contracts';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

describePortContracts('sqlite', async () => {
  const db = openSqliteDatabase(':memory:');
  return { ports: createSqlitePorts(db), cleanup: () => void db.close() };
});
