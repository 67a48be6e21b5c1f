import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { leaseModelProperty } from '@strongroom/core/testing/models';
import { describe, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { SqliteDeploymentStore } from './second-factor-store.js';

describe('job leases, model-based, on SQLite', () => {
  it('two connections to one database file never both hold a lease', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sr-lease-'));
    const file = join(dir, 'db.sqlite');
    // Two connections to one file: what two server processes over one data dir have.
    const first = openSqliteDatabase(file);
    const second = openSqliteDatabase(file);
    const seed = Date.now();
    try {
      await fc.assert(
        leaseModelProperty(async () => [new SqliteDeploymentStore(first), new SqliteDeploymentStore(second)] as const),
        { numRuns: 60, seed },
      );
    } catch (err) {
      console.error(`lease model on SQLite failed with seed ${seed}`);
      throw err;
    } finally {
      first.close();
      second.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
