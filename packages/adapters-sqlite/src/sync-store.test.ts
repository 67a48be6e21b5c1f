import { describe, expect, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { SYNC_PAGE_SQL } from './sync-store.js';

describe('the sync page read on SQLite', () => {
  it('is one range of the page index, in its order, and each object read by key (no table scan, no sort of the range)', () => {
    const db = openSqliteDatabase(':memory:');
    try {
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN ${SYNC_PAGE_SQL}`)
        .all('a', 0, 10)
        .map((r) => (r as { detail: string }).detail);
      // The range comes from the index alone: no lookup of each entry's row.
      expect(plan).toContain('SEARCH sync_changes USING COVERING INDEX sync_changes_page_idx (account_id=? AND seq>?)');
      expect(plan).toContain('SEARCH a USING INDEX sqlite_autoindex_assets_1 (id=?) LEFT-JOIN');
      expect(plan).toContain('SEARCH s USING INDEX sqlite_autoindex_upload_sessions_1 (id=?) LEFT-JOIN');
      expect(plan).toContain('SEARCH b USING INDEX asset_blobs_asset_idx (asset_id=?) LEFT-JOIN');
      // The one scan is of the range itself (the co-routine), never of a table.
      expect(plan.filter((l) => /^SCAN /.test(l))).toEqual(['SCAN c']);
      // Only the blobs of one entry are put in order, never the page or the account's range.
      expect(plan.filter((l) => /TEMP B-TREE/.test(l))).toEqual(['USE TEMP B-TREE FOR LAST TERM OF ORDER BY']);
    } finally {
      db.close();
    }
  });
});
