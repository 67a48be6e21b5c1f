import { openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { linkIdHash, sealLinkId } from '@strongroom/core';
import { TEST_SECRET_KEY, testLinkId, testSecretBox } from '@strongroom/core/testing';
import { describe, expect, it } from 'vitest';
import { rowNamed, SEALED_COLUMNS } from './sealed.js';

describe('the sealed columns verify-backup opens', () => {
  it("each names a column of this build's schema and the column its context is read from", () => {
    const db = openSqliteDatabase(':memory:');
    try {
      for (const c of SEALED_COLUMNS) {
        const columns = (db.prepare('SELECT name FROM pragma_table_info(?)').all(c.table) as { name: string }[]).map(
          (r) => r.name,
        );
        expect(columns, c.table).toEqual(expect.arrayContaining([c.column, c.context]));
      }
    } finally {
      db.close();
    }
  });

  it('a link id opens with the key it was sealed under, on its own row only', async () => {
    const links = SEALED_COLUMNS.find((c) => c.table === 'links')!;
    const [id, other] = [testLinkId(1), testLinkId(2)];
    const sealed = await sealLinkId(testSecretBox(), id, linkIdHash(id)!);
    expect(await links.opener(TEST_SECRET_KEY)(sealed, linkIdHash(id)!)).toBe(true);
    expect(await links.opener(TEST_SECRET_KEY)(sealed, linkIdHash(other)!)).toBe(false);
    expect(await links.opener(new Uint8Array(32).fill(1))(sealed, linkIdHash(id)!)).toBe(false);
  });

  it("a failure names the row by its context, except where the context is a bearer secret's hash", () => {
    const of = (table: string) => SEALED_COLUMNS.find((c) => c.table === table)!;
    const hash = linkIdHash(testLinkId(3))!;
    expect(rowNamed(of('links'), hash)).not.toContain(hash);
    expect(rowNamed(of('oidc_flows'), 'f'.repeat(64))).not.toContain('f'.repeat(64));
    expect(rowNamed(of('totp_enrollments'), 'account-1')).toBe('account_id account-1');
    expect(rowNamed(of('signing_keys'), 'k1')).toBe('kid k1');
  });
});
