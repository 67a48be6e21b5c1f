import fc from 'fast-check';
import { deletionModelProperty } from '@strongroom/core/testing/models';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createPgPorts } from './ports.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

// On PostgreSQL (PG_URL) or PGlite, in a database of its own: each run starts from an emptied, migrated database.
let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('account deletion, model-based, on PostgreSQL', () => {
  it('deleting any account, in any state, leaves every other account as it was; the sweep credits exactly what only the deleted held', async () => {
    await fc.assert(
      deletionModelProperty(async () => {
        await t.reset();
        return createPgPorts(t.db);
      }),
      { numRuns: 12 },
    );
  }, 300_000);
});
