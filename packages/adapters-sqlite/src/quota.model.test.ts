import fc from 'fast-check';
import { quotaModelProperty } from '@strongroom/core/testing/models';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

describe('quota ledger, model-based, on SQLite', () => {
  it('matches the model after every step (sponsors, drops, links, federated caching included)', async () => {
    const open: { close(): void }[] = [];
    try {
      await fc.assert(
        quotaModelProperty(async () => {
          const db = openSqliteDatabase(':memory:');
          open.push(db);
          return createSqlitePorts(db);
        }),
        { numRuns: 30 },
      );
    } finally {
      for (const db of open) db.close();
    }
  }, 180_000);
});
