import fc from 'fast-check';
import {
  recordsModelProperty,
  sessionModelProperty,
  totpModelProperty,
  upgradeModelProperty,
} from '@strongroom/core/testing/models';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createPgPorts } from './ports.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

// The model-based properties core shares with every adapter, on PostgreSQL (PG_URL) or PGlite.
// Each run starts from an emptied, migrated database rather than a new one: same isolation, a
// fraction of the cost. Generous timeouts: a property the runner cut off would go on resetting the
// shared database under the next one.
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
        return createPgPorts(t.db).accounts;
      }),
      { numRuns: 20 },
    );
  }, 180_000);

  it('TOTP second factor matches the model and keeps its invariants after every step', async () => {
    await fc.assert(
      totpModelProperty(async () => {
        await t.reset();
        const p = createPgPorts(t.db);
        return { store: p.accounts, totpStore: p.totp };
      }),
      { numRuns: 30 },
    );
  }, 180_000);

  it('upgrade ceremony keeps one live intent and fixed expiries after every step', async () => {
    await fc.assert(
      upgradeModelProperty(async () => {
        await t.reset();
        return createPgPorts(t.db);
      }),
      { numRuns: 15 },
    );
  }, 180_000);

  it('deprecations and attestation keys match the model after every step, through two processes', async () => {
    await fc.assert(
      recordsModelProperty(async () => {
        await t.reset();
        const p = createPgPorts(t.db);
        return { deprecations: p.deprecations, attestation: p.attestation };
      }),
      { numRuns: 10 },
    );
  }, 180_000);
});
