import fc from 'fast-check';
import { signInThrottleModelProperty } from '@strongroom/core/testing/models';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createPgPorts } from './ports.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

// On PostgreSQL (PG_URL) or PGlite; each run starts from an emptied, migrated database.
let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

describe('password guessing, model-based, on PostgreSQL', () => {
  it('refuses and judges every login exactly as the rule says, with the exact Retry-After, and never more than ten wrong passwords per address an hour without a ticket', async () => {
    await fc.assert(
      signInThrottleModelProperty(async () => {
        await t.reset();
        return createPgPorts(t.db);
      }),
      { numRuns: 15 },
    );
  }, 300_000);
});
