import fc from 'fast-check';
import { totpThrottleModelProperty } from '@strongroom/core/testing/models';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

describe('per-account second-factor throttle, model-based, on SQLite', () => {
  it('holds sign-in exactly as the rule says, with the exact Retry-After, after every step', async () => {
    const open: { close(): void }[] = [];
    try {
      await fc.assert(
        totpThrottleModelProperty(async () => {
          const db = openSqliteDatabase(':memory:');
          open.push(db);
          return createSqlitePorts(db);
        }),
        { numRuns: 50 },
      );
    } finally {
      for (const db of open) db.close();
    }
  }, 120_000);
});
