import fc from 'fast-check';
import { deletionModelProperty } from '@strongroom/core/testing/models';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

describe('account deletion, model-based, on SQLite', () => {
  it('deleting any account, in any state, leaves every other account as it was; the sweep credits exactly what only the deleted held', async () => {
    const open: { close(): void }[] = [];
    try {
      await fc.assert(
        deletionModelProperty(async () => {
          const db = openSqliteDatabase(':memory:');
          open.push(db);
          return createSqlitePorts(db);
        }),
        { numRuns: 100 },
      );
    } finally {
      for (const db of open) db.close();
    }
  }, 180_000);
});
