import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resumableModelProperty } from '@strongroom/core/testing/models';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { createSqlitePorts } from './ports.js';

describe('resumable uploads, model-based, on SQLite', () => {
  it('the offset HEAD reads is what was acknowledged, and racing PATCHes keep one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sr-resumable-'));
    const db = openSqliteDatabase(join(dir, 'db.sqlite'));
    const seed = Date.now();
    try {
      await fc.assert(
        resumableModelProperty(async () => createSqlitePorts(db)),
        { numRuns: 40, seed },
      );
    } catch (err) {
      console.error(`resumable model on SQLite failed with seed ${seed}`);
      throw err;
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
