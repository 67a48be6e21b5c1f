/**
 * A rule's row predicate as data. Where a rule decides which rows a store's statement takes (the
 * uploads still open at an instant, the pending drops that lapsed, the capabilities a revoke or a
 * purge reaches), core states it once as a {@link RowFilter}: its own judgment of one record is
 * {@link holds}, and each store applies the same value, rendered to SQL by sql-common or checked row
 * by row by the memory stores. A change to the rule is a change here and nowhere else.
 *
 * The terms are what an index can serve: a column against a list of literals, or against a value
 * given as a parameter (an instant, or an id such as the account whose rows a statement reaches),
 * never a function of a column.
 */

/** One condition on a field of the record (named as the record names it: `expiresAt`). */
export type FilterTerm<F extends string> =
  /** The field is one of these values (rendered as literals, so a partial index on them applies). */
  | { readonly op: 'in'; readonly field: F; readonly values: readonly string[] }
  | { readonly op: 'isNull'; readonly field: F }
  | { readonly op: 'notNull'; readonly field: F }
  /** The field compared with an instant passed by name at the time of the call. */
  | { readonly op: '>' | '>=' | '<' | '<='; readonly field: F; readonly param: string }
  /**
   * The field equals, or differs from, a value passed by name (an id, an instant): which account's
   * rows, every row but the caller's own.
   */
  | { readonly op: '=' | '<>'; readonly field: F; readonly param: string }
  /** Any of these terms. */
  | { readonly op: 'or'; readonly terms: readonly FilterTerm<F>[] };

/** Every term holds (a conjunction). */
export type RowFilter<F extends string> = readonly FilterTerm<F>[];

/** The values a filter names (instants, ids), by parameter name. */
export type FilterParams = Readonly<Record<string, number | string>>;

function param(params: FilterParams, name: string): number | string {
  const value = params[name];
  if (value === undefined) throw new Error(`the filter needs the parameter ${name}`);
  return value;
}

function instant(params: FilterParams, name: string): number {
  const value = param(params, name);
  if (typeof value !== 'number') throw new Error(`the filter's parameter ${name} is an instant`);
  return value;
}

function termHolds<F extends string>(
  term: FilterTerm<F>,
  row: Readonly<Record<F, unknown>>,
  params: FilterParams,
): boolean {
  if (term.op === 'or') return term.terms.some((t) => termHolds(t, row, params));
  const value = row[term.field];
  switch (term.op) {
    case 'in':
      return typeof value === 'string' && term.values.includes(value);
    case 'isNull':
      return value === null || value === undefined;
    case 'notNull':
      return value !== null && value !== undefined;
    // As in SQL: a comparison with a missing value is not true, `<>` included.
    case '=':
      return value !== null && value !== undefined && value === param(params, term.param);
    case '<>':
      return value !== null && value !== undefined && value !== param(params, term.param);
    default: {
      if (typeof value !== 'number') return false;
      const at = instant(params, term.param);
      if (term.op === '>') return value > at;
      if (term.op === '>=') return value >= at;
      if (term.op === '<') return value < at;
      return value <= at;
    }
  }
}

/** Whether the record is one the filter takes, with these instants: what a store's statement applies row by row. */
export function holds<F extends string>(
  filter: RowFilter<F>,
  row: Readonly<Record<F, unknown>>,
  params: FilterParams,
): boolean {
  return filter.every((term) => termHolds(term, row, params));
}
