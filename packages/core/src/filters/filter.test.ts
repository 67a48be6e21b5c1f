import { describe, expect, it } from 'vitest';
import { holds, type RowFilter } from './filter.js';

type Row = { id: string | null; accountId: string; closedAt: number | null };

describe('holds', () => {
  // Every row of one account but one: what a statement closing "the others" takes.
  const others: RowFilter<keyof Row> = [
    { op: '=', field: 'accountId', param: 'accountId' },
    { op: '<>', field: 'id', param: 'keep' },
  ];
  const params = { accountId: 'a', keep: 's1' };

  it('an equality term takes the rows whose field is the value, a difference the rows whose field is another', () => {
    expect(holds(others, { id: 's2', accountId: 'a', closedAt: null }, params)).toBe(true);
    expect(holds(others, { id: 's1', accountId: 'a', closedAt: null }, params)).toBe(false);
    expect(holds(others, { id: 's2', accountId: 'b', closedAt: null }, params)).toBe(false);
  });

  it('as in SQL, a missing value is neither equal to nor different from anything', () => {
    expect(holds(others, { id: null, accountId: 'a', closedAt: null }, params)).toBe(false);
    const closedAt: RowFilter<keyof Row> = [{ op: '=', field: 'closedAt', param: 'at' }];
    expect(holds(closedAt, { id: 'x', accountId: 'a', closedAt: null }, { at: 5 })).toBe(false);
  });

  it('compares numbers with numbers: an equal instant is equal, a string naming it is not', () => {
    const at: RowFilter<keyof Row> = [{ op: '=', field: 'closedAt', param: 'at' }];
    expect(holds(at, { id: 'x', accountId: 'a', closedAt: 5 }, { at: 5 })).toBe(true);
    expect(holds(at, { id: 'x', accountId: 'a', closedAt: 5 }, { at: '5' })).toBe(false);
  });

  it('refuses a filter whose parameter is missing, or an order comparison with a value that is no instant', () => {
    expect(() => holds(others, { id: 's2', accountId: 'a', closedAt: null }, { accountId: 'a' })).toThrow(/keep/);
    const before: RowFilter<keyof Row> = [{ op: '<', field: 'closedAt', param: 'at' }];
    expect(() => holds(before, { id: 'x', accountId: 'a', closedAt: 5 }, { at: 'soon' })).toThrow(/instant/);
  });
});
