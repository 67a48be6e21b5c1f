import fc from 'fast-check';
import { registrationModelProperty } from '@strongroom/core/testing/models';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createPgPorts } from './ports.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

describe('who may register, model-based, on PostgreSQL', () => {
  it('matches the model after every step, through two port sets on the pool', { timeout: 180_000 }, async () => {
    await fc.assert(
      registrationModelProperty(async () => {
        await t.reset();
        return [createPgPorts(t.db), createPgPorts(t.db)];
      }),
      { numRuns: 20 },
    );
  });
});
