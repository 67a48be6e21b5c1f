import { DrizzleQueryError } from 'drizzle-orm/errors';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { CoreError } from '@strongroom/core';
import { failureForLog } from './failure.js';

const LINK_ID = 'Zk3v9QbLq0T2aW8xYcN1mA';
const ADDRESS = 'someone@example.org';

/** A server's refusal as node-postgres raises it. */
function databaseError(message: string, code: string): Error {
  const e = new pg.DatabaseError(message, message.length, 'error');
  e.code = code;
  e.severity = 'ERROR';
  return e;
}

/** A store failure as it reaches the server: drizzle's error around the driver's, in a CoreError. */
function storeFailure(cause: Error): CoreError {
  const statement = new DrizzleQueryError(
    'select "id", "account_id" from "links" where "links"."id" = $1 and "owner" = $2',
    [LINK_ID, ADDRESS],
    cause,
  );
  return new CoreError('error.store.unavailable', 'reading the link failed', { cause: statement });
}

describe('failureForLog', () => {
  it("keeps no statement's parameters, whatever the database said", () => {
    for (const cause of [
      databaseError('canceling statement due to statement timeout', '57014'),
      databaseError(`invalid input syntax for type uuid: "${LINK_ID}"`, '22P02'),
      databaseError('duplicate key value violates unique constraint "links_pkey"', '23505'),
      new Error('Connection terminated unexpectedly'),
    ]) {
      const text = failureForLog(storeFailure(cause));
      expect(text).not.toContain(LINK_ID);
      expect(text).not.toContain(ADDRESS);
      expect(text).not.toContain('select');
    }
  });

  it("says what the database said where that names no value: the SQLSTATE always, the message for the connection's or the server's troubles", () => {
    expect(failureForLog(storeFailure(databaseError('canceling statement due to statement timeout', '57014')))).toBe(
      'postgres ERROR 57014: canceling statement due to statement timeout',
    );
    expect(
      failureForLog(storeFailure(databaseError(`invalid input syntax for type uuid: "${LINK_ID}"`, '22P02'))),
    ).toBe('postgres ERROR 22P02');
    expect(
      failureForLog(
        storeFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })),
      ),
    ).toBe('Error ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:5432');
  });

  it('describes an error without a cause by itself', () => {
    expect(failureForLog(new TypeError('x is not a function'))).toBe('TypeError: x is not a function');
    expect(failureForLog('plain')).toBe('plain');
  });
});
