import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testAccount } from '@strongroom/port-contracts';
import { rowsOf } from './db.js';
import { createPgPorts } from './ports.js';
import { emptyTables, openTestDatabase, type TestDatabase } from './testing.js';

/** Every application table's row count, by name. */
async function counts(t: TestDatabase): Promise<Record<string, number>> {
  return Object.fromEntries(Object.entries(await t.dump()).map(([table, rows]) => [table, rows.length]));
}

let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

describe('emptyTables, what each contract test starts from', () => {
  it('leaves every application table empty, rows that others point at included, and foreign keys checked again afterwards', async () => {
    const ports = createPgPorts(t.db);
    const a = testAccount('Emptied');
    await ports.accounts.createAccount(a);
    // A row that points at the account: a pending second factor.
    expect(await ports.totp.savePendingTotp({ accountId: a.id, sealedSecret: 'sealed', at: 1_000 })).toBe(true);
    const before = await counts(t);
    expect(Object.values(before).filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);

    await emptyTables(t.db);

    const after = await counts(t);
    expect(Object.keys(after)).toEqual(Object.keys(before));
    expect(Object.entries(after).filter(([, n]) => n > 0)).toEqual([]);
    // The foreign keys went unchecked for the emptying transaction only: every connection of the
    // pool is back to checking them.
    const roles = await Promise.all(
      Array.from({ length: 4 }, () =>
        rowsOf<{ role: string }>(t.db, sql`SELECT current_setting('session_replication_role') AS role`),
      ),
    );
    expect(roles.map(([r]) => r!.role)).toEqual(['origin', 'origin', 'origin', 'origin']);
  });
});
