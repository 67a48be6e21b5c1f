import fc from 'fast-check';
import { sessionModelProperty, totpModelProperty } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { PgStore } from './store.js';
import { PgTotpStore } from './totp-store.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

// The model-based properties core shares with every adapter, on PostgreSQL (PG_URL) or PGlite.
// Each run starts from an emptied, migrated database rather than a new one: same isolation, a
// fraction of the cost.
let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

describe('model-based properties on PostgreSQL', () => {
  it('session ledger matches the model after every step', async () => {
    await fc.assert(
      sessionModelProperty(async () => {
        await t.reset();
        return new PgStore(t.db);
      }),
      { numRuns: 20 },
    );
  });

  it('TOTP second factor matches the model and keeps its invariants after every step', async () => {
    await fc.assert(
      totpModelProperty(async () => {
        await t.reset();
        return { store: new PgStore(t.db), totpStore: new PgTotpStore(t.db) };
      }),
      { numRuns: 30 },
    );
  });
});
