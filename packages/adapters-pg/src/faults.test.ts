import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgDatabase, type OpenPgDatabase } from './open.js';
import { PgStore } from './store.js';
import { createScratchDatabase, pgUrlFromEnv, TcpProxy, type ScratchDatabase } from './testing.js';

/**
 * A database that stops answering without closing anything (a network partition): statements must
 * fail within the configured bound instead of hanging the request, and the pool must serve again
 * once the partition heals. Needs a TCP connection to cut: PG_URL.
 */
const PG_URL = pgUrlFromEnv();
if (!PG_URL)
  console.warn(
    'faults.test.ts: SKIPPED: PG_URL is not set; a network partition needs a TCP connection (PGlite is in-process).',
  );

describe.skipIf(!PG_URL)('PostgreSQL behind a partition (PG_URL)', () => {
  let scratch: ScratchDatabase;
  let proxy: TcpProxy;
  let opened: OpenPgDatabase;
  let store: PgStore;
  const account = {
    id: '0190a000-0000-7000-8000-0000000fa017',
    address: 'partition@example.org',
    addressKey: 'partition@example.org',
    passwordHash: 'h',
    displayName: null,
    createdAt: 1,
    lockedAt: null,
    credentialsChangedAt: null,
  };

  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'partition');
    const target = new URL(scratch.url);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    opened = await openPgDatabase(proxy.urlFor(scratch.url), {
      queryTimeoutMs: 500,
      connectTimeoutMs: 500,
      maxConnections: 2,
    });
    store = new PgStore(opened.db);
    await store.createAccount(account);
  });
  afterAll(async () => {
    await proxy?.up();
    await opened?.close();
    await proxy?.down();
    await scratch?.drop();
  });

  it('statements fail within the bound while partitioned, and succeed once it heals', async () => {
    expect(await store.findAccountById(account.id)).toEqual(account);
    proxy.stall();
    const started = Date.now();
    await expect(store.findAccountById(account.id)).rejects.toThrow();
    await expect(store.setDisplayName(account.id, 'half')).rejects.toThrow();
    await expect(store.closeAllSessions(account.id, 5)).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(5_000);
    await proxy.up();
    // The pool recovers without a restart (a few tries: timed-out connections are discarded as used).
    let back = null;
    for (let i = 0; i < 10 && back === null; i++) back = await store.findAccountById(account.id).catch(() => null);
    expect(back).not.toBeNull();
  });
});
