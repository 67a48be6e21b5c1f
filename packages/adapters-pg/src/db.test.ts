import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namedRowsOf, namedTransaction, RenderedStatement, rowsOf } from './db.js';
import { openUnmigratedTestDatabase, type UnmigratedTestDatabase } from './testing.js';

/**
 * The hot raw statements go to the driver itself, not through drizzle's private session API: on
 * node-postgres each is prepared under its name on the connection that runs it (which is what
 * saves PostgreSQL parsing and planning it again), and a transaction's statements all run on one
 * connection, rolled back whole when its body throws. On PGlite the same calls run unnamed.
 */
describe('named statements and transactions on the driver', () => {
  let t: UnmigratedTestDatabase;
  beforeAll(async () => {
    t = await openUnmigratedTestDatabase();
    await t.db.execute(sql`CREATE TABLE named_probe (id int PRIMARY KEY)`);
  });
  afterAll(async () => t.close());

  const prepared = async () =>
    (await rowsOf<{ name: string }>(t.db, sql`SELECT name FROM pg_prepared_statements`)).map((r) => r.name);

  it('namedRowsOf answers rows and, on node-postgres, leaves the statement prepared under its name', async () => {
    const rows = await namedRowsOf<{ n: number }>(t.db, 'sr_probe_select', sql`SELECT ${sql.param(41)}::int + 1 AS n`);
    expect(rows).toEqual([{ n: 42 }]);
    if (t.kind !== 'postgres') return;
    // The pool has several connections: ask until the one that prepared it answers (each asks once).
    const seen = new Set<string>();
    for (let i = 0; i < 20 && !seen.has('sr_probe_select'); i++) {
      await namedRowsOf(t.db, 'sr_probe_select', sql`SELECT ${sql.param(1)}::int + 1 AS n`);
      for (const name of await prepared()) seen.add(name);
    }
    expect(seen.has('sr_probe_select')).toBe(true);
  });

  it('a rendered statement takes new values on each call, a placeholder used twice included, in and out of a transaction', async () => {
    const statement = new RenderedStatement<{ ids: number[]; shift: number }>(
      sql`SELECT x + ${sql.placeholder('shift')} AS n FROM unnest(${sql.placeholder('ids')}::int[]) AS x WHERE x = ANY(${sql.placeholder('ids')}::int[]) AND x > ${sql.param(0)} ORDER BY x`,
    );
    expect(await namedRowsOf(t.db, 'sr_probe_rendered', statement.with({ ids: [3, 1], shift: 10 }))).toEqual([
      { n: 11 },
      { n: 13 },
    ]);
    expect(await namedRowsOf(t.db, 'sr_probe_rendered', statement.with({ ids: [5], shift: 100 }))).toEqual([
      { n: 105 },
    ]);
    const inside = await namedTransaction(t.db, async (tx) => [
      await tx.named<{ n: number }>('sr_probe_rendered', statement.with({ ids: [2], shift: 1 })),
      await tx.namedThenCommit<{ n: number }>('sr_probe_rendered', statement.with({ ids: [7, 8], shift: -7 })),
    ]);
    expect(inside).toEqual([[{ n: 3 }], [{ n: 0 }, { n: 1 }]]);
    expect(() => statement.with({ ids: [1] } as unknown as { ids: number[]; shift: number })).toThrow(/shift/);
  });

  it('namedTransaction commits its named and query-builder statements together, or nothing when the body throws', async () => {
    await namedTransaction(t.db, async (tx) => {
      await tx.named('sr_probe_insert', sql`INSERT INTO named_probe VALUES (${sql.param(1)}) RETURNING id`);
      await tx.db.execute(sql`INSERT INTO named_probe VALUES (2)`);
      if (t.kind === 'postgres')
        expect(
          await tx.named<{ name: string }>(
            'sr_probe_prepared',
            sql`SELECT name FROM pg_prepared_statements WHERE name = 'sr_probe_insert'`,
          ),
        ).toHaveLength(1);
    });
    await expect(
      namedTransaction(t.db, async (tx) => {
        await tx.named('sr_probe_insert', sql`INSERT INTO named_probe VALUES (${sql.param(3)}) RETURNING id`);
        await tx.db.execute(sql`INSERT INTO named_probe VALUES (4)`);
        throw new Error('the body fails');
      }),
    ).rejects.toThrow('the body fails');
    const ids = (await rowsOf<{ id: number }>(t.db, sql`SELECT id FROM named_probe ORDER BY id`)).map((r) => r.id);
    expect(ids).toEqual([1, 2]);
  });

  it('namedThenCommit: the last statement and its COMMIT together; a failing one keeps nothing of the transaction', async () => {
    const ids = async () =>
      (await rowsOf<{ id: number }>(t.db, sql`SELECT id FROM named_probe WHERE id >= 10 ORDER BY id`)).map((r) => r.id);
    const rows = await namedTransaction(t.db, async (tx) => {
      await tx.named('sr_probe_insert', sql`INSERT INTO named_probe VALUES (${sql.param(10)}) RETURNING id`);
      return tx.namedThenCommit<{ id: number }>(
        'sr_probe_insert',
        sql`INSERT INTO named_probe VALUES (${sql.param(11)}) RETURNING id`,
      );
    });
    expect(rows).toEqual([{ id: 11 }]);
    expect(await ids()).toEqual([10, 11]);
    // The last statement fails (a duplicate key): the COMMIT behind it only rolls back, and the
    // statement before it in the same transaction is gone too.
    await expect(
      namedTransaction(t.db, async (tx) => {
        await tx.named('sr_probe_insert', sql`INSERT INTO named_probe VALUES (${sql.param(12)}) RETURNING id`);
        return tx.namedThenCommit(
          'sr_probe_insert',
          sql`INSERT INTO named_probe VALUES (${sql.param(10)}) RETURNING id`,
        );
      }),
    ).rejects.toThrow(/duplicate key|Failed query/);
    expect(await ids()).toEqual([10, 11]);
    // The statements behind a BEGIN that was not awaited ran inside it: a body that throws after
    // its first statement leaves nothing, and every connection of the pool is usable afterwards.
    await expect(
      namedTransaction(t.db, async (tx) => {
        await tx.named('sr_probe_insert', sql`INSERT INTO named_probe VALUES (${sql.param(13)}) RETURNING id`);
        throw new Error('after the first statement');
      }),
    ).rejects.toThrow('after the first statement');
    expect(await ids()).toEqual([10, 11]);
    const many = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        namedTransaction(t.db, (tx) =>
          tx.namedThenCommit<{ id: number }>(
            'sr_probe_insert',
            sql`INSERT INTO named_probe VALUES (${sql.param(20 + i)}) RETURNING id`,
          ),
        ),
      ),
    );
    expect(
      many
        .flat()
        .map((r) => r.id)
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 12 }, (_, i) => 20 + i));
  });
});
