import fc from 'fast-check';
import { oidcModelProperty } from '@strongroom/core/testing/models';
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

describe('OpenID flow, model-based, on PostgreSQL', () => {
  it('redeems each state and login code at most once and never after its lifetime', { timeout: 180_000 }, async () => {
    await fc.assert(
      oidcModelProperty(async () => {
        await t.reset();
        return createPgPorts(t.db);
      }),
      { numRuns: 20 },
    );
  });
});
