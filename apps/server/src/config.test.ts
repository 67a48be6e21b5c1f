import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from './config.js';

describe('readConfig', () => {
  it('has the specified defaults', () => {
    const c = readConfig({});
    expect(c).toMatchObject({
      port: 8080,
      dataDir: './data',
      databaseUrl: null,
      sessionIdleMs: 180 * 86_400_000,
      sessionMaxMs: 365 * 86_400_000,
      quotaGraceMs: 14 * 86_400_000,
      keyGraceMs: 86_400_000,
      protocolMin: '2026-03-01',
      protocolMax: '2026-11-01',
    });
  });
  it('reads every variable in seconds or bytes; empty hard limit is unlimited', () => {
    const c = readConfig({
      SVC_SESSION_IDLE_S: '60',
      SVC_SESSION_MAX_S: '120',
      SVC_QUOTA_SOFT_BYTES: '10',
      SVC_QUOTA_HARD_BYTES: '',
      SVC_PROTOCOL_MIN: '2026-01-01',
      SVC_BASE_URL: 'https://photos.example.org/',
    });
    expect(c).toMatchObject({
      sessionIdleMs: 60_000,
      sessionMaxMs: 120_000,
      quotaSoftBytes: 10,
      quotaHardBytes: null,
      protocolMin: '2026-01-01',
      baseUrl: 'https://photos.example.org',
    });
  });
  it('without SVC_BASE_URL, the base URL is the address the server listens on (HOST, default 127.0.0.1), never localhost', () => {
    expect(readConfig({}).baseUrl).toBe('http://127.0.0.1:8080');
    expect(readConfig({}).totpIssuer).toBe('127.0.0.1');
    expect(readConfig({ PORT: '9000', HOST: '192.168.1.20' }).baseUrl).toBe('http://192.168.1.20:9000');
    expect(readConfig({ HOST: '0.0.0.0' }).baseUrl).toBe('http://127.0.0.1:8080');
    expect(readConfig({ HOST: '::' }).baseUrl).toBe('http://127.0.0.1:8080');
    expect(readConfig({ HOST: '::1', SVC_TOTP_ISSUER: 'Photos' }).baseUrl).toBe('http://[::1]:8080');
    expect(readConfig({ HOST: '::1', SVC_BASE_URL: 'https://photos.example.org' }).baseUrl).toBe(
      'https://photos.example.org',
    );
  });
  it('reads who may register: open unless SVC_REGISTRATION says closed or allowlist', () => {
    expect(readConfig({}).registration).toBe('open');
    expect(readConfig({ SVC_REGISTRATION: 'closed' }).registration).toBe('closed');
    expect(readConfig({ SVC_REGISTRATION: 'allowlist' }).registration).toBe('allowlist');
  });
  it('bounds each store queue at SVC_STORE_QUEUE calls (default 1,024)', () => {
    expect(readConfig({})).toMatchObject({ storeQueue: 1024 });
    expect(readConfig({ SVC_STORE_QUEUE: '16' })).toMatchObject({ storeQueue: 16 });
  });
  it('derives the soft limit from the hard one when only the hard one is set', () => {
    expect(readConfig({})).toMatchObject({ quotaHardBytes: 10 * 1024 ** 3, quotaSoftBytes: 8 * 1024 ** 3 });
    expect(readConfig({ SVC_QUOTA_HARD_BYTES: '1000' })).toMatchObject({ quotaHardBytes: 1000, quotaSoftBytes: 800 });
    expect(readConfig({ SVC_QUOTA_HARD_BYTES: '' })).toMatchObject({ quotaHardBytes: null, quotaSoftBytes: null });
    expect(() => readConfig({ SVC_QUOTA_HARD_BYTES: '1000', SVC_QUOTA_SOFT_BYTES: '2000' })).toThrow(
      'SVC_QUOTA_SOFT_BYTES',
    );
  });

  it('stops on an invalid value, naming the variable', () => {
    for (const [name, value] of [
      ['SVC_SESSION_IDLE_S', 'ten'],
      ['SVC_SESSION_MAX_S', '-5'],
      ['SVC_QUOTA_HARD_BYTES', '1.5'],
      ['SVC_KEY_GRACE_S', '60'],
      ['SVC_PROTOCOL_MAX', '2026-02-30'],
      ['SVC_BASE_URL', 'not a url'],
      ['PORT', 'eighty'],
      ['SVC_DATABASE_URL', 'mysql://x'],
      ['SVC_DROP_TTL_S', '0'],
      ['SVC_STORE_QUEUE', '0'],
      ['SVC_FEDERATED_BUDGET_PCT', '101'],
      ['SVC_FEDERATED_BUDGET_PCT', '2.5'],
      ['SVC_REGISTRATION', 'Closed'],
      ['SVC_REGISTRATION', 'invite'],
      ['SVC_SIGNIN_FAILURES_PER_SOURCE', '0'],
      ['SVC_SIGNIN_FAILURES_PER_SOURCE', 'lots'],
      ['SVC_TRUSTED_PROXIES', '10.0.0.0/8, proxy.internal'],
      ['SVC_TRUSTED_PROXIES', '10.0.0.0/33'],
    ] as const) {
      expect(() => readConfig({ [name]: value })).toThrow(ConfigError);
      expect(() => readConfig({ [name]: value })).toThrow(name);
    }
  });

  it('reads the pooler in front of PostgreSQL (default none), and refuses one without PostgreSQL or of an unknown kind', () => {
    const pg = { SVC_DATABASE_URL: 'postgres://app@pgbouncer.internal:6432/strongroom' };
    expect(readConfig(pg).pgPooler).toBe('none');
    expect(readConfig({ ...pg, SVC_PG_POOLER: 'transaction' }).pgPooler).toBe('transaction');
    for (const env of [
      { ...pg, SVC_PG_POOLER: 'session' },
      { ...pg, SVC_PG_POOLER: 'Transaction' },
      { SVC_PG_POOLER: 'transaction' },
    ]) {
      expect(() => readConfig(env)).toThrow(ConfigError);
      expect(() => readConfig(env)).toThrow('SVC_PG_POOLER');
    }
  });

  it('reads the per-client-address sign-in limit (default 100) and the trusted proxies (default none)', () => {
    expect(readConfig({})).toMatchObject({ signInFailuresPerSource: 100, trustedProxies: [] });
    const c = readConfig({
      SVC_SIGNIN_FAILURES_PER_SOURCE: '20',
      SVC_TRUSTED_PROXIES: '10.0.0.0/8, fd00::/8 192.168.1.1',
    });
    expect(c.signInFailuresPerSource).toBe(20);
    expect(c.trustedProxies.map((p) => p.prefix)).toEqual([8, 8, 32]);
  });

  it('reads the drop lifetime and the federated budget share', () => {
    expect(readConfig({})).toMatchObject({ dropTtlMs: 7 * 86_400_000, federatedBudgetPct: 25 });
    expect(readConfig({ SVC_DROP_TTL_S: '60', SVC_FEDERATED_BUDGET_PCT: '0' })).toMatchObject({
      dropTtlMs: 60_000,
      federatedBudgetPct: 0,
    });
  });
});
