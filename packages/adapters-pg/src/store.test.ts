import { afterAll, beforeAll } from 'vitest';
import { describePortContracts } from '@strongroom/port-contracts';
import { createPgPorts } from './ports.js';
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
  // The test database is a pool of several connections: every port set races on real connections.
  return { ports: createPgPorts(t.db), connect: async () => createPgPorts(t.db) };
});
