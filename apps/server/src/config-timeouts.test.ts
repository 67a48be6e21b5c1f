import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from './config.js';

describe('HTTP timeouts and shutdown grace (config)', () => {
  it('defaults: headers 10 s, request 300 s, idle 30 s, keep-alive 5 s, shutdown grace 10 s', () => {
    expect(readConfig({}).http).toEqual({ headersMs: 10_000, requestMs: 300_000, idleMs: 30_000, keepAliveMs: 5_000, shutdownGraceMs: 10_000 });
  });

  it('reads each from its variable, in seconds', () => {
    const env = { SVC_HEADERS_TIMEOUT_S: '2', SVC_REQUEST_TIMEOUT_S: '60', SVC_IDLE_TIMEOUT_S: '7', SVC_KEEPALIVE_TIMEOUT_S: '3', SVC_SHUTDOWN_GRACE_S: '25' };
    expect(readConfig(env).http).toEqual({ headersMs: 2_000, requestMs: 60_000, idleMs: 7_000, keepAliveMs: 3_000, shutdownGraceMs: 25_000 });
  });

  it.each(['SVC_HEADERS_TIMEOUT_S', 'SVC_REQUEST_TIMEOUT_S', 'SVC_IDLE_TIMEOUT_S', 'SVC_KEEPALIVE_TIMEOUT_S', 'SVC_SHUTDOWN_GRACE_S'])(
    'refuses a bad %s, naming it',
    (name) => {
      for (const bad of ['0', '-1', '1.5', 'ten']) expect(() => readConfig({ [name]: bad })).toThrow(new RegExp(`^${name} `));
    },
  );

  it('refuses a headers timeout longer than the request timeout', () => {
    expect(() => readConfig({ SVC_HEADERS_TIMEOUT_S: '20', SVC_REQUEST_TIMEOUT_S: '10' })).toThrow(ConfigError);
    expect(() => readConfig({ SVC_HEADERS_TIMEOUT_S: '20', SVC_REQUEST_TIMEOUT_S: '10' })).toThrow(/SVC_HEADERS_TIMEOUT_S/);
  });
});
