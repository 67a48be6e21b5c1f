import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describePortContracts } from '@strongroom/port-contracts';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

// A file per test, so `connect` can open a second connection to the same database (WAL, as served).
describePortContracts('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sr-contract-'));
  const file = join(dir, 'db.sqlite');
  const open = [openSqliteDatabase(file)];
  return {
    ports: createSqlitePorts(open[0]!),
    connect: async () => {
      const db = openSqliteDatabase(file);
      open.push(db);
      return createSqlitePorts(db);
    },
    cleanup: () => {
      for (const db of open) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
