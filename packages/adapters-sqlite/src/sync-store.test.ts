import { describe, expect, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { SYNC_PAGE_SQL } from './sync-store.js';

describe('the sync page read on SQLite', () => {
  it('is one range of the (account_id, seq) index, in its order (no sort, no table scan)', () => {
    const db = openSqliteDatabase(':memory:');
    try {
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN ${SYNC_PAGE_SQL}`)
        .all('a', 0, 10)
        .map((r) => (r as { detail: string }).detail);
      expect(plan).toEqual(['SEARCH sync_changes USING INDEX sync_changes_seq_idx (account_id=? AND seq>?)']);
    } finally {
      db.close();
    }
  });
});
