import { pgSchema } from '@strongroom/adapters-pg';
import { sqliteSchema } from '@strongroom/adapters-sqlite';
import { getTableConfig as pgTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { getTableConfig as sqliteTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core';
import { describe, expect, it } from 'vitest';

/**
 * The SQLite and PostgreSQL schemas are written twice, one per dialect, and must describe the same
 * tables. This reads both drizzle schemas and compares them in dialect-free terms: tables, columns
 * and what each column holds, nullability, defaults, keys, indexes (with their columns, uniqueness
 * and whether they are partial) and foreign keys.
 */

type Kind = 'text' | 'integer' | 'bytes' | 'boolean' | 'real' | 'json';

/** What a column holds, whatever the dialect calls it. */
function kindOf(sqlType: string): Kind {
  const t = sqlType.toLowerCase();
  if (t === 'text' || t.startsWith('varchar')) return 'text';
  if (['integer', 'bigint', 'smallint', 'serial', 'bigserial'].includes(t)) return 'integer';
  if (t === 'blob' || t === 'bytea') return 'bytes';
  if (t === 'boolean') return 'boolean';
  if (t === 'real' || t === 'double precision' || t === 'numeric') return 'real';
  if (t === 'json' || t === 'jsonb') return 'json';
  throw new Error(`no kind for the SQL type ${sqlType}`);
}

interface Shape {
  readonly columns: Record<
    string,
    { kind: Kind; notNull: boolean; hasDefault: boolean; primary: boolean; unique: boolean }
  >;
  readonly primaryKeys: string[];
  readonly uniques: string[];
  readonly indexes: string[];
  readonly foreignKeys: string[];
}

type AnyConfig = ReturnType<typeof sqliteTableConfig> | ReturnType<typeof pgTableConfig>;

type AnyColumn = AnyConfig['columns'][number];

/**
 * Whether the database fills the column when an insert leaves it out. SQLite's INTEGER PRIMARY KEY
 * is the rowid, which drizzle reports as a default; only one declared AUTOINCREMENT is meant as a
 * generated key (PostgreSQL's bigserial), the others are always written.
 */
function filled(c: AnyColumn): boolean {
  if (c.columnType === 'SQLiteInteger' && c.primary)
    return (c as AnyColumn & { autoIncrement?: boolean }).autoIncrement === true;
  return c.hasDefault;
}

function shapeOf(config: AnyConfig, sqliteBoolean: (c: AnyColumn) => boolean): Shape {
  const columns: Shape['columns'] = {};
  for (const c of config.columns) {
    // SQLite stores a boolean as an integer; drizzle's boolean mode says what the column means.
    const kind = sqliteBoolean(c) ? 'boolean' : kindOf(c.getSQLType());
    columns[c.name] = { kind, notNull: c.notNull, hasDefault: filled(c), primary: c.primary, unique: c.isUnique };
  }
  const names = (cols: readonly { name: string }[]) => cols.map((c) => c.name).join(',');
  return {
    columns,
    primaryKeys: config.primaryKeys.map((k) => names(k.columns)).sort(),
    uniques: config.uniqueConstraints.map((u) => names(u.columns)).sort(),
    indexes: config.indexes
      .map((i) => {
        const cols = i.config.columns.map((c) => ('name' in c ? String(c.name) : 'expression')).join(',');
        return `${i.config.name}(${cols})${i.config.unique ? ' unique' : ''}${i.config.where ? ' partial' : ''}`;
      })
      .sort(),
    foreignKeys: config.foreignKeys
      .map((f) => {
        const r = f.reference();
        const target = r.foreignTable[Symbol.for('drizzle:Name') as unknown as keyof typeof r.foreignTable];
        return `(${names(r.columns)}) -> ${String(target)}(${names(r.foreignColumns)}) on delete ${f.onDelete ?? 'no action'}`;
      })
      .sort(),
  };
}

const sqliteTables = new Map(
  (Object.values(sqliteSchema) as unknown[])
    .filter((t): t is SQLiteTable => t instanceof SQLiteTable)
    .map((t) => sqliteTableConfig(t))
    .map((c) => [c.name, shapeOf(c, (col) => col.columnType === 'SQLiteBoolean')]),
);
const pgTables = new Map(
  (Object.values(pgSchema) as unknown[])
    .filter((t): t is PgTable => t instanceof PgTable)
    .map((t) => pgTableConfig(t))
    .map((c) => [c.name, shapeOf(c, () => false)]),
);

describe('the SQLite and PostgreSQL schemas', () => {
  it('have the same tables', () => {
    expect(sqliteTables.size).toBeGreaterThan(30);
    expect([...pgTables.keys()].sort()).toEqual([...sqliteTables.keys()].sort());
  });

  for (const [name, sqlite] of sqliteTables) {
    it(`describe ${name} alike: columns, kinds, nullability, defaults, keys, indexes`, () => {
      const pg = pgTables.get(name);
      expect(pg, `${name} is missing from the PostgreSQL schema`).toBeDefined();
      expect(pg).toEqual(sqlite);
    });
  }
});
