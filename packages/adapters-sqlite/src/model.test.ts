import fc from 'fast-check';
import type { Ports } from '@strongroom/core';
import { sessionModelProperty, totpModelProperty, upgradeModelProperty } from '@strongroom/core/testing/models';
import { afterEach, describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

// The model-based properties core shares with every adapter, on SQLite: each run gets a fresh
// in-memory database through the adapter's own createSqlitePorts. Generous timeouts: a property
// cut off by the runner would keep running into the next test.
const open: { close(): void }[] = [];
function freshPorts(): Ports {
  const db = openSqliteDatabase(':memory:');
  open.push(db);
  return createSqlitePorts(db);
}
afterEach(() => {
  for (const db of open.splice(0)) db.close();
});

describe('model-based properties on SQLite', () => {
  it('session ledger matches the model after every step', async () => {
    await fc.assert(
      sessionModelProperty(async () => freshPorts().accounts),
      { numRuns: 30 },
    );
  }, 120_000);

  it('TOTP second factor matches the model and keeps its invariants after every step', async () => {
    await fc.assert(
      totpModelProperty(async () => {
        const p = freshPorts();
        return { store: p.accounts, totpStore: p.totp };
      }),
      { numRuns: 60 },
    );
  }, 120_000);

  it('upgrade ceremony keeps one live intent and fixed expiries after every step', async () => {
    await fc.assert(
      upgradeModelProperty(async () => freshPorts()),
      { numRuns: 40 },
    );
  }, 120_000);
});
