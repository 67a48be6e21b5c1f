import fc from 'fast-check';
import { totpModelProperty } from '@strongroom/core/testing';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { SqliteStore } from './store.js';
import { SqliteTotpStore } from './totp-store.js';

describe('TOTP second factor, model-based, on SQLite', () => {
  it('matches the model and keeps its invariants after every step', async () => {
    const open: { close(): void }[] = [];
    try {
      await fc.assert(
        totpModelProperty(async () => {
          const db = openSqliteDatabase(':memory:');
          open.push(db);
          return { store: new SqliteStore(db), totpStore: new SqliteTotpStore(db) };
        }),
        { numRuns: 60 },
      );
    } finally {
      for (const db of open) db.close();
    }
  });
});
