import fc from 'fast-check';
import { registrationModelProperty } from '@strongroom/core/testing/models';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

describe('who may register, model-based, on SQLite', () => {
  it('matches the model after every step, through two connections to one database file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sr-registration-model-'));
    const open: { close(): void }[] = [];
    let n = 0;
    try {
      await fc.assert(
        registrationModelProperty(async () => {
          const file = join(dir, `db-${n++}.sqlite`);
          const a = openSqliteDatabase(file);
          const b = openSqliteDatabase(file);
          open.push(a, b);
          return [createSqlitePorts(a), createSqlitePorts(b)];
        }),
        { numRuns: 20 },
      );
    } finally {
      for (const db of open) db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
