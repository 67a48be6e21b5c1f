import fc from 'fast-check';
import { totpThrottleModelProperty } from '@strongroom/core/testing/models';
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

describe('per-account second-factor throttle, model-based, on PostgreSQL', () => {
  it('holds sign-in exactly as the rule says, with the exact Retry-After, after every step', async () => {
    await fc.assert(
      totpThrottleModelProperty(async () => {
        await t.reset();
        return createPgPorts(t.db);
      }),
      { numRuns: 20 },
    );
  }, 300_000);
});
