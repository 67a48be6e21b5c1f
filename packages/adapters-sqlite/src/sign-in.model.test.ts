import fc from 'fast-check';
import { signInThrottleModelProperty } from '@strongroom/core/testing/models';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

describe('password guessing, model-based, on SQLite', () => {
  it('refuses and judges every login exactly as the rule says, with the exact Retry-After, and never more than ten wrong passwords per address an hour without a ticket', async () => {
    const open: { close(): void }[] = [];
    try {
      await fc.assert(
        signInThrottleModelProperty(async () => {
          const db = openSqliteDatabase(':memory:');
          open.push(db);
          return createSqlitePorts(db);
        }),
        { numRuns: 40 },
      );
    } finally {
      for (const db of open) db.close();
    }
  }, 180_000);
});
