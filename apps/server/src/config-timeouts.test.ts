import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from './config.js';

const PG = { SVC_DATABASE_URL: 'postgres://app@db.internal:5432/strongroom' };

describe('HTTP timeouts and shutdown grace (config)', () => {
  it('defaults: headers 10 s, request 300 s, idle 30 s, keep-alive 5 s, shutdown grace 10 s', () => {
    expect(readConfig({}).http).toEqual({
      headersMs: 10_000,
      requestMs: 300_000,
      idleMs: 30_000,
      keepAliveMs: 5_000,
      shutdownGraceMs: 10_000,
    });
  });

  it('reads each from its variable, in seconds', () => {
    const env = {
      SVC_HEADERS_TIMEOUT_S: '2',
      SVC_REQUEST_TIMEOUT_S: '60',
      SVC_IDLE_TIMEOUT_S: '7',
      SVC_KEEPALIVE_TIMEOUT_S: '3',
      SVC_SHUTDOWN_GRACE_S: '25',
    };
    expect(readConfig(env).http).toEqual({
      headersMs: 2_000,
      requestMs: 60_000,
      idleMs: 7_000,
      keepAliveMs: 3_000,
      shutdownGraceMs: 25_000,
    });
  });

  it.each([
    'SVC_HEADERS_TIMEOUT_S',
    'SVC_REQUEST_TIMEOUT_S',
    'SVC_IDLE_TIMEOUT_S',
    'SVC_KEEPALIVE_TIMEOUT_S',
    'SVC_SHUTDOWN_GRACE_S',
  ])('refuses a bad %s, naming it', (name) => {
    for (const bad of ['0', '-1', '1.5', 'ten'])
      expect(() => readConfig({ [name]: bad })).toThrow(new RegExp(`^${name} `));
  });

  it('refuses a headers timeout longer than the request timeout', () => {
    expect(() => readConfig({ SVC_HEADERS_TIMEOUT_S: '20', SVC_REQUEST_TIMEOUT_S: '10' })).toThrow(ConfigError);
    expect(() => readConfig({ SVC_HEADERS_TIMEOUT_S: '20', SVC_REQUEST_TIMEOUT_S: '10' })).toThrow(
      /SVC_HEADERS_TIMEOUT_S/,
    );
  });

  it('database waits: statement 15 s and connection 5 s by default, well inside the socket timeouts', () => {
    const c = readConfig({});
    expect(c.database).toEqual({ statementMs: 15_000, connectMs: 5_000 });
    // A margin of 10 s before the idle timeout closes a socket whose handler waits on the database.
    expect(c.http.idleMs - (c.database.statementMs + c.database.connectMs)).toBeGreaterThanOrEqual(10_000);
    expect(readConfig({ SVC_DB_STATEMENT_TIMEOUT_S: '2', SVC_DB_CONNECT_TIMEOUT_S: '1' }).database).toEqual({
      statementMs: 2_000,
      connectMs: 1_000,
    });
    for (const name of ['SVC_DB_STATEMENT_TIMEOUT_S', 'SVC_DB_CONNECT_TIMEOUT_S']) {
      for (const bad of ['0', '-1', '1.5', 'ten'])
        expect(() => readConfig({ [name]: bad })).toThrow(new RegExp(`^${name} `));
    }
  });

  it('refuses, naming the variables, database waits that a socket timeout would cut off (equal included)', () => {
    const inverted: Record<string, string>[] = [
      { SVC_IDLE_TIMEOUT_S: '20' },
      { SVC_IDLE_TIMEOUT_S: '10' },
      { SVC_DB_STATEMENT_TIMEOUT_S: '30', SVC_DB_CONNECT_TIMEOUT_S: '1' },
      {
        SVC_DB_STATEMENT_TIMEOUT_S: '60',
        SVC_IDLE_TIMEOUT_S: '120',
        SVC_REQUEST_TIMEOUT_S: '60',
        SVC_HEADERS_TIMEOUT_S: '10',
      },
    ];
    for (const env of inverted) {
      expect(() => readConfig({ ...env, ...PG })).toThrow(ConfigError);
      expect(() => readConfig({ ...env, ...PG })).toThrow(
        /SVC_DB_CONNECT_TIMEOUT_S \+ SVC_DB_STATEMENT_TIMEOUT_S .* must be shorter than SVC_(IDLE|REQUEST)_TIMEOUT_S/,
      );
      // SQLite is a file in the process: no partition, no such wait.
      expect(() => readConfig(env)).not.toThrow();
    }
    expect(() => readConfig({ SVC_IDLE_TIMEOUT_S: '21', ...PG })).not.toThrow();
    expect(() => readConfig(PG)).not.toThrow();
  });
});
