import fc from 'fast-check';
import { recordsModelProperty } from '@strongroom/core/testing/models';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { SqliteAttestationStore, SqliteDeprecationStore } from './records-store.js';

describe('deprecations and attestation keys, model-based, on SQLite', () => {
  it('match the model after every step, through two processes', async () => {
    const open: { close(): void }[] = [];
    try {
      await fc.assert(
        recordsModelProperty(async () => {
          const db = openSqliteDatabase(':memory:');
          open.push(db);
          return { deprecations: new SqliteDeprecationStore(db), attestation: new SqliteAttestationStore(db) };
        }),
        { numRuns: 20 },
      );
    } finally {
      for (const db of open) db.close();
    }
  }, 120_000);
});
