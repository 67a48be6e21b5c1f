import fc from 'fast-check';
import { resumableModelProperty } from '@strongroom/core/testing/models';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createPgPorts } from './ports.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('resumable uploads, model-based, on PostgreSQL', () => {
  it('the offset HEAD reads is what was acknowledged, and racing PATCHes keep one', async () => {
    const seed = Date.now();
    try {
      await fc.assert(
        resumableModelProperty(async () => createPgPorts(t.db)),
        { numRuns: 25, seed },
      );
    } catch (err) {
      console.error(`resumable model on ${t.kind} failed with seed ${seed}`);
      throw err;
    }
  }, 120_000);
});
