import type { FilterTerm, RowFilter } from '@strongroom/core';
import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';
import { sqlStringList } from './rows.js';

/**
 * Core's row filters (packages/core/src/filters) as SQL, for both dialects: the stores pass the
 * filter and their column names, never the predicate itself. A list of values becomes literals (a
 * partial index over those states still applies); an instant or an id becomes a bound parameter.
 */

/** A record field as its column is named in both schemas: `expiresAt` is `expires_at`. */
export const columnOf = (field: string): string => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * The filter as text for a prepared statement: `param` spells each parameter's placeholder (`?` for
 * a positional statement, whose caller binds the values in the order they appear).
 */
export function filterSql<F extends string>(
  filter: RowFilter<F>,
  param: (name: string) => string = () => '?',
  column: (field: F) => string = columnOf,
): string {
  const term = (t: FilterTerm<F>): string => {
    switch (t.op) {
      case 'or':
        return `(${t.terms.map(term).join(' OR ')})`;
      case 'in':
        return `${column(t.field)} IN ${sqlStringList(t.values)}`;
      case 'isNull':
        return `${column(t.field)} IS NULL`;
      case 'notNull':
        return `${column(t.field)} IS NOT NULL`;
      default:
        return `${column(t.field)} ${t.op} ${param(t.param)}`;
    }
  };
  return filter.map(term).join(' AND ');
}

/**
 * The filter as a drizzle condition: `column` names each field (a table's column, or raw SQL), and
 * each parameter is bound from `params` (a value, or a drizzle placeholder of a prepared query).
 */
export function filterWhere<F extends string>(
  filter: RowFilter<F>,
  params: Readonly<Record<string, number | string | SQLWrapper>>,
  column: (field: F) => SQLWrapper = (f) => sql.raw(columnOf(f)),
): SQL {
  const term = (t: FilterTerm<F>): SQL => {
    switch (t.op) {
      case 'or':
        return sql`(${sql.join(t.terms.map(term), sql` OR `)})`;
      case 'in':
        return sql`${column(t.field)} IN ${sql.raw(sqlStringList(t.values))}`;
      case 'isNull':
        return sql`${column(t.field)} IS NULL`;
      case 'notNull':
        return sql`${column(t.field)} IS NOT NULL`;
      default: {
        const value = params[t.param];
        if (value === undefined) throw new Error(`the filter needs the parameter ${t.param}`);
        return sql`${column(t.field)} ${sql.raw(t.op)} ${value}`;
      }
    }
  };
  return sql.join(filter.map(term), sql` AND `);
}
