import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core';
import {
  CAPABILITY_PURGEABLE,
  DROP_LAPSED,
  type RowFilter,
  UPLOAD_IN_FLIGHT,
  UPLOAD_LAPSED,
  UPLOAD_STATES,
} from '@strongroom/core';
import { OPEN_STATES } from '@strongroom/core/internal';
import { filterSql, filterWhere, OPEN_STATE_SQL, sqlStringList } from './index.js';

const packages = fileURLToPath(new URL('../..', import.meta.url));

/** The adapters' store sources: the schema files are the one documented exception (drizzle-kit). */
function storeSources(): { file: string; text: string }[] {
  return ['adapters-sqlite', 'adapters-pg'].flatMap((pkg) => {
    const dir = join(packages, pkg, 'src');
    return readdirSync(dir)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map((f) => ({ file: `${pkg}/src/${f}`, text: readFileSync(join(dir, f), 'utf8') }));
  });
}

describe('the in-flight predicate, once', () => {
  it('OPEN_STATE_SQL is core’s OPEN_STATES as an SQL list', () => {
    expect(OPEN_STATE_SQL).toBe(sqlStringList(OPEN_STATES));
    expect(OPEN_STATE_SQL).toBe("('Pending', 'Uploading', 'WaitingForProcessing')");
  });

  it('no store spells an upload state inside an SQL list of its own', () => {
    // A list such as ('Pending', 'Uploading', ...) or IN ('Pending') restates core's predicate.
    const names = UPLOAD_STATES.join('|');
    const list = new RegExp(`\\(\\s*'(?:${names})'\\s*[,)]`);
    const offenders = storeSources()
      .filter((s) => list.test(s.text))
      .map((s) => s.file);
    expect(offenders).toEqual([]);
  });
});

describe('the expiry predicates, once', () => {
  it('renders core’s filters as the statements apply them: literal states, the instant a parameter', () => {
    expect(filterSql(UPLOAD_IN_FLIGHT)).toBe(`state IN ${OPEN_STATE_SQL} AND expires_at > ?`);
    expect(filterSql(UPLOAD_LAPSED, (name) => `@${name}`)).toBe(`state IN ${OPEN_STATE_SQL} AND expires_at <= @now`);
    expect(filterSql(DROP_LAPSED)).toBe(`state IN ('pending_drop') AND drop_expires_at <= ?`);
    expect(filterSql(CAPABILITY_PURGEABLE)).toBe('expires_at <= ? AND (revoked_at IS NULL OR revoked_at <= ?)');
  });

  it('renders an equality and a difference with a bound value, as text and as a drizzle condition', () => {
    const others: RowFilter<'accountId' | 'id'> = [
      { op: '=', field: 'accountId', param: 'accountId' },
      { op: '<>', field: 'id', param: 'keep' },
    ];
    expect(filterSql(others, (name) => `@${name}`)).toBe('account_id = @accountId AND id <> @keep');
    const where = new SQLiteSyncDialect().sqlToQuery(filterWhere(others, { accountId: 'a', keep: 's1' }));
    expect(where).toMatchObject({ sql: 'account_id = ? AND id <> ?', params: ['a', 's1'] });
  });

  it('no store compares an expiry, a revocation or a tombstone’s age itself', () => {
    // Those comparisons are core's filters (UPLOAD_IN_FLIGHT, UPLOAD_LAPSED, DROP_LAPSED, the
    // capability filters, REVOKE_ALL_CHALLENGE_LAPSED, OIDC_LAPSED, TOTP_CHALLENGE_LAPSED,
    // SIGN_IN_TICKETS_DROPPED, TOMBSTONE_PRUNED), applied through filterSql and filterWhere.
    const tables =
      'uploadSessions|assets|mintedCapabilities|revokeAllChallenges|oidcFlows|oidcLoginCodes|totpChallenges|signInTickets';
    const restated = [
      /\b(?:drop_)?expires_at\s*(?:<=|>=|<|>)/,
      new RegExp(`(?:${tables})\\.(?:expiresAt|dropExpiresAt|revokedAt)\\}?\\s*(?:<=|>=|<|>)`),
      new RegExp(`\\b(?:lt|lte|gt|gte)\\(\\s*(?:${tables})\\.(?:expiresAt|dropExpiresAt|revokedAt)`),
      /sync_changes WHERE[^`\n]*\bat\s*(?:<=|>=|<|>)/,
    ];
    const offenders = storeSources()
      .filter((s) => restated.some((r) => r.test(s.text)))
      .map((s) => s.file);
    expect(offenders).toEqual([]);
  });
});

describe('the sessions a credential change closes, once', () => {
  it('no store picks them with a WHERE of its own', () => {
    // PASSWORD_CHANGE_CLOSES and CREDENTIAL_CHANGE_CLOSES: the caller's session is spared by the
    // filter, not by an `id <>` a store writes.
    const restated = [/sessions\.id\}?\s*<>/, /\bne\(\s*sessions\.id/, /\bid\s*<>\s*\?/];
    const offenders = storeSources()
      .filter((s) => restated.some((r) => r.test(s.text)))
      .map((s) => s.file);
    expect(offenders).toEqual([]);
  });
});
