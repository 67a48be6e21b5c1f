import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { peerBucketModelProperty } from '@strongroom/core/testing/models';
import { describe, it } from 'vitest';
import { SqliteDiscoveryStore } from './discovery-store.js';
import { openSqliteDatabase } from './migrate.js';

describe('per-peer bucket, model-based, on SQLite', () => {
  it('two connections to one database file draw from one bucket and never over-admit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sr-bucket-'));
    const file = join(dir, 'db.sqlite');
    // Two connections to one file: what two server processes over one data dir have.
    const first = openSqliteDatabase(file);
    const second = openSqliteDatabase(file);
    const seed = Date.now();
    try {
      await fc.assert(
        peerBucketModelProperty(
          async () => [new SqliteDiscoveryStore(first), new SqliteDiscoveryStore(second)] as const,
        ),
        { numRuns: 80, seed },
      );
    } catch (err) {
      console.error(`peer bucket model on SQLite failed with seed ${seed}`);
      throw err;
    } finally {
      first.close();
      second.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
