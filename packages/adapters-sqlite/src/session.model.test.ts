import fc from 'fast-check';
import { sessionModelProperty } from '@strongroom/core/testing';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { SqliteStore } from './store.js';

describe('session ledger, model-based, on SQLite', () => {
  it('matches the model after every step', async () => {
    const open: { close(): void }[] = [];
    try {
      await fc.assert(
        sessionModelProperty(async () => {
          const db = openSqliteDatabase(':memory:');
          open.push(db);
          return new SqliteStore(db);
        }),
        { numRuns: 30 },
      );
    } finally {
      for (const db of open) db.close();
    }
  });
});
