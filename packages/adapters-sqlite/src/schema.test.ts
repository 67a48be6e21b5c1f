import { OPEN_STATE_SQL } from '@strongroom/sql-common';
import { describe, expect, it } from 'vitest';
import { openSqliteDatabase } from './migrate.js';
import { OPEN_STATE_LIST } from './schema/quota.js';

describe('the schemas follow core', () => {
  it('the open-session index predicate is exactly core OPEN_STATES', () => {
    expect(OPEN_STATE_LIST).toBe(OPEN_STATE_SQL);
  });

  it("expiring a payer's lapsed sessions reads the open-session index, not the payer's whole history", () => {
    const db = openSqliteDatabase(':memory:');
    try {
      const plan = db
        .prepare(
          `EXPLAIN QUERY PLAN UPDATE upload_sessions SET state = 'Expired' WHERE payer_id = ? AND state IN ${OPEN_STATE_SQL} AND expires_at <= ?`,
        )
        .all('p', 1) as { detail: string }[];
      expect(plan.map((r) => r.detail).join('\n')).toContain('upload_sessions_open_payer_idx');
    } finally {
      db.close();
    }
  });
});
