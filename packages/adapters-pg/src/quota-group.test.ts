import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { NewUpload, QuotaPolicy } from '@strongroom/core';
import { testAccount } from '@strongroom/port-contracts';
import { openPgDatabase, type OpenPgDatabase } from './open.js';
import { PgQuotaStore } from './quota-store.js';
import { PgSponsorshipStore } from './sharing-store.js';
import { PgStore } from './store.js';
import { PgOidcStore } from './oidc-store.js';
import {
  createScratchDatabase,
  openTestDatabase,
  pgUrlFromEnv,
  type ScratchDatabase,
  type TestDatabase,
} from './testing.js';

/** Upload-session openings that arrive together are decided and written as one group (openUpload). */

const policy: QuotaPolicy = {
  defaults: { soft: null, hard: 1_000 },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 1000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};
let serial = 0;
const opening = (
  uploaderId: string,
  declaredSize: number,
  at = 10_000,
  contentHash: string | null = null,
): NewUpload => ({
  id: `0190f000-0000-7000-8000-${String(++serial).padStart(12, '0')}`,
  uploaderId,
  kind: 'original',
  declaredSize,
  contentHash,
  albumId: null,
  intentId: null,
  dropLinkIdHash: null,
  sourcePeer: null,
  createdAt: at,
  expiresAt: at + 5_000,
});
const outcome = (r: Awaited<ReturnType<PgQuotaStore['openUpload']>>) => (r.ok ? r.value.state : r.code);
describe('PgQuotaStore: openings in one group', () => {
  let t: TestDatabase;
  let store: PgQuotaStore;
  beforeAll(async () => {
    t = await openTestDatabase();
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    await t.reset();
    store = new PgQuotaStore(t.db);
  });

  // Arrival order, lapsed sessions and sponsors within one group: the quota port contract (every adapter).

  it("an account's ledger row is written with it, so its first openings are not rolled back to create one", async () => {
    const registered = testAccount('first');
    const signedInWithOidc = testAccount('first');
    expect(await new PgStore(t.db).createAccount(registered)).toBe('created');
    expect(
      await new PgOidcStore(t.db).createLinkedAccount(signedInWithOidc, {
        issuer: 'https://op.example',
        subject: 's2',
        accountId: signedInWithOidc.id,
        createdAt: 1_000,
      }),
    ).toBe('created');
    const first = await Promise.all([
      store.openUpload(opening(registered.id, 10), policy, 10_000),
      store.openUpload(opening(signedInWithOidc.id, 10), policy, 10_000),
    ]);
    expect(first.map(outcome)).toEqual(['Pending', 'Pending']);
    expect(store.groupsMissingRows).toBe(0);
    // An account from before rows were written with accounts still gets its row on its first opening.
    expect(outcome(await store.openUpload(opening('from-before', 10), policy, 10_000))).toBe('Pending');
    expect(store.groupsMissingRows).toBe(1);
    expect((await store.readLedger('from-before', 10_000)).reserved).toBe(10);
  });

  it('never merge at creation: an announced hash that is stored already reserves like any other (a merge needs the bytes, at finalize)', async () => {
    const hash = 'a'.repeat(64);
    const first = await store.openUpload(opening('a', 10, 10_000, hash), policy, 10_000);
    expect(first.ok).toBe(true);
    await store.markReceived(first.ok ? first.value.id : '', { size: 10, hash }, 10_000);
    const done = await store.completeUpload(
      {
        uploadId: first.ok ? first.value.id : '',
        contentHash: hash,
        size: 10,
        asset: { create: { id: '0190f000-0000-7000-8000-aaaaaaaaaaaa', ownerId: 'a', dropExpiresAt: null } },
      },
      policy,
      10_000,
    );
    expect(typeof done === 'string' ? done : done.outcome).toBe('completed');
    const results = await Promise.all([
      store.openUpload(opening('b', 500, 10_000, hash), policy, 10_000),
      store.openUpload(opening('b', 500, 10_000, 'b'.repeat(64)), policy, 10_000),
    ]);
    expect(results.map(outcome)).toEqual(['Pending', 'Pending']);
    expect((await store.readLedger('b', 10_000)).reserved).toBe(1_000);
  });
});

const PG_URL = pgUrlFromEnv();
describe.skipIf(!PG_URL)('PgQuotaStore: groups from several processes (PG_URL)', () => {
  let scratch: ScratchDatabase;
  const pools: OpenPgDatabase[] = [];
  beforeAll(async () => {
    scratch = await createScratchDatabase(PG_URL!, 'quotagroup');
    for (let i = 0; i < 4; i++)
      pools.push(await openPgDatabase(scratch.url, { maxConnections: 4, connectTimeoutMs: 60_000 }));
  });
  afterAll(async () => {
    for (const p of pools) await p.close();
    await scratch?.drop();
  });

  it('sponsors opening beside the accounts they sponsor, crosswise, all succeed and add up', async () => {
    const stores = pools.map((p) => new PgQuotaStore(p.db));
    const big: QuotaPolicy = { ...policy, defaults: { soft: null, hard: 10_000_000 } };
    // Two families; each pool's group holds one family's sponsor as an uploader and the other
    // family's child, so the groups want each other's rows as sponsors: the deadlock-prone shape.
    const sponsorship = new PgSponsorshipStore(pools[0]!.db);
    expect((await sponsorship.setSponsor('kid-1', 'sponsor-1')).ok).toBe(true);
    expect((await sponsorship.setSponsor('kid-2', 'sponsor-2')).ok).toBe(true);
    const rounds = 20;
    const perRound = (s: PgQuotaStore, i: number) =>
      Promise.all([
        s.openUpload(opening(i % 2 === 0 ? 'sponsor-1' : 'sponsor-2', 1), big, 10_000),
        s.openUpload(opening(i % 2 === 0 ? 'kid-2' : 'kid-1', 1), big, 10_000),
      ]);
    const all: Awaited<ReturnType<typeof perRound>>[] = [];
    for (let r = 0; r < rounds; r++) all.push(...(await Promise.all(stores.map((s, i) => perRound(s, i)))));
    expect(all.flat().every((x) => x.ok)).toBe(true);
    const total = rounds * stores.length; // each pool: one for a sponsor, one for a kid, per round
    const s1 = await stores[0]!.readLedger('sponsor-1', 10_000);
    const s2 = await stores[0]!.readLedger('sponsor-2', 10_000);
    expect(s1.reserved + s2.reserved).toBe(total * 2);
  }, 60_000);
});
