import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewUpload, QuotaPolicy } from '@strongroom/core';
import { openPgDatabase, type OpenPgDatabase } from './open.js';
import { PgQuotaStore } from './quota-store.js';
import { createScratchDatabase, pgUrlFromEnv, type ScratchDatabase } from './testing.js';

/**
 * Eight pools stand in for eight server processes, three connections each, all creating
 * upload sessions for one payer at once. Only meaningful with many connections: PG_URL.
 */
const PG_URL = pgUrlFromEnv();
if (!PG_URL)
  console.warn(
    'quota-race.test.ts: SKIPPED: PG_URL is not set; PGlite has a single connection, so there is no race to run.',
  );

describe.skipIf(!PG_URL)('PgQuotaStore under real concurrency (PG_URL)', () => {
  let scratch: ScratchDatabase;
  const pools: OpenPgDatabase[] = [];
  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'quotarace');
    for (let i = 0; i < 8; i++)
      pools.push(await openPgDatabase(scratch.url, { maxConnections: 3, connectTimeoutMs: 60_000 }));
  });
  afterAll(async () => {
    for (const p of pools) await p.close();
    await scratch?.drop();
  });

  it('8 pools x 3 connections, 100 creations each: exactly floor(hard / size) are reserved', async () => {
    const payer = '0190f000-0000-7000-8000-000000000001';
    const session = (prefix: string, i: number): NewUpload => ({
      id: `0190f000-0000-7000-8${prefix}-${String(i).padStart(12, '0')}`,
      uploaderId: payer,
      kind: 'original',
      declaredSize: 3,
      contentHash: null,
      albumId: null,
      intentId: null,
      dropLinkIdHash: null,
      sourcePeer: null,
      createdAt: 1_000,
      expiresAt: 100_000,
    });
    const policy: QuotaPolicy = {
      defaults: { soft: null, hard: 1000 },
      graceMs: 1_000,
      federatedShare: 0.25,
      maxOpenUploads: 1000,
      followUpMs: 900_000,
      followUpOverdraft: 16_777_216,
    };
    const outcomes = (
      await Promise.all(
        pools.map((p, t) => {
          const store = new PgQuotaStore(p.db);
          return Promise.all(
            Array.from({ length: 100 }, async (_, i) => {
              const r = await store.openUpload(session(`${t}00`, i), policy, 1_000);
              return r.ok ? 'reserved' : r.code === 'error.quota.exceeded' ? 'exceeded' : r.code;
            }),
          );
        }),
      )
    ).flat();
    expect(outcomes.filter((o) => o === 'reserved')).toHaveLength(333);
    expect(outcomes.filter((o) => o === 'exceeded')).toHaveLength(800 - 333);
    const ledger = await new PgQuotaStore(pools[0]!.db).readLedger(payer, 1_000);
    expect(ledger.reserved).toBe(999);
  }, 60_000);
});
