import fc from 'fast-check';
import { syncModelProperty } from '@strongroom/core/testing/models';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createPgPorts } from './ports.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

// The sync model on PostgreSQL (PG_URL) or PGlite, in a database of its own, emptied for each run.
let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('library sync, model-based, on PostgreSQL', () => {
  it('replaying the pages any client read rebuilds exactly the live state, whatever writes and reads interleave', async () => {
    await fc.assert(
      syncModelProperty(async () => {
        await t.reset();
        return createPgPorts(t.db);
      }),
      { numRuns: 8 },
    );
  }, 300_000);
});
