import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgPorts } from './ports.js';
import { openTestDatabase, type TestDatabase } from './testing.js';

// On PostgreSQL (PG_URL) or PGlite.
let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

const T0 = Date.parse('2026-12-07T10:00:00.000Z');

describe('PgSignInStore', () => {
  it('a refused attempt writes no row: a flood of made-up addresses from a held source leaves the table as it was', async () => {
    await t.reset();
    const { signIn } = createPgPorts(t.db);
    const claim = (address: string, at: number) => ({
      addressKey: address,
      legacyKey: address,
      sourceKey: '4:198.51.100.9',
      ticketHash: null,
      at,
      sourceLimit: 2,
    });
    expect((await signIn.claimPasswordCheck(claim('first@example.org', T0))).admitted).toBe(true);
    expect((await signIn.claimPasswordCheck(claim('second@example.org', T0 + 1))).admitted).toBe(true);
    const rows = async () =>
      Number(
        (
          (await t.db.execute(sql`SELECT count(*) AS n FROM sign_in_counts`)) as unknown as {
            rows: { n: string | number }[];
          }
        ).rows[0]!.n,
      );
    const before = await rows();
    expect(before).toBe(3);
    for (let i = 0; i < 50; i++)
      expect((await signIn.claimPasswordCheck(claim(`made-up-${i}@example.org`, T0 + 2 + i))).admitted).toBe(false);
    expect(await rows()).toBe(before);
  });
});
