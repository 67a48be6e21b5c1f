import fc from 'fast-check';
import { oidcModelProperty } from '@strongroom/core/testing/models';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

describe('OpenID flow, model-based, on SQLite', () => {
  it('redeems each state and login code at most once and never after its lifetime', { timeout: 60_000 }, async () => {
    const open: { close(): void }[] = [];
    try {
      await fc.assert(
        oidcModelProperty(async () => {
          const db = openSqliteDatabase(':memory:');
          open.push(db);
          return createSqlitePorts(db);
        }),
        { numRuns: 30 },
      );
    } finally {
      for (const db of open) db.close();
    }
  });
});
