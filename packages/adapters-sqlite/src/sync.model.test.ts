import fc from 'fast-check';
import { syncModelProperty } from '@strongroom/core/testing/models';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

describe('library sync, model-based, on SQLite', () => {
  it('replaying the pages any client read rebuilds exactly the live state, whatever writes and reads interleave', async () => {
    const open: { close(): void }[] = [];
    try {
      await fc.assert(
        syncModelProperty(async () => {
          const db = openSqliteDatabase(':memory:');
          open.push(db);
          return createSqlitePorts(db);
        }),
        { numRuns: 30 },
      );
    } finally {
      for (const db of open) db.close();
    }
  }, 300_000);
});
