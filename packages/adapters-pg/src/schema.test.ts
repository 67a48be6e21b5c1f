import { OPEN_STATE_SQL } from '@strongroom/sql-common';
import { describe, expect, it } from 'vitest';
import { OPEN_STATE_LIST } from './schema/quota.js';

describe('the schema follows core', () => {
  it('the open-session index predicate is exactly core OPEN_STATES', () => {
    expect(OPEN_STATE_LIST).toBe(OPEN_STATE_SQL);
  });
});
