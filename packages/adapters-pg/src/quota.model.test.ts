import fc from 'fast-check';
import { quotaModelProperty } from '@strongroom/core/testing/models';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createPgPorts } from './ports.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

// The quota model on PostgreSQL (PG_URL) or PGlite, in a database of its own: each run starts from
// an emptied, migrated database.
let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('quota ledger, model-based, on PostgreSQL', () => {
  it('matches the model after every step (sponsors, drops, links, federated caching included)', async () => {
    await fc.assert(
      quotaModelProperty(async () => {
        await t.reset();
        return createPgPorts(t.db);
      }),
      { numRuns: 8 },
    );
  }, 300_000);
});
