import { describe, expect, it } from 'vitest';
import type { QuotaPolicy } from '../quota/machine.js';
import { QuotaService } from '../quota/service.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryBlobStore } from '../testing/memory-blob-store.js';
import { createMemoryPorts } from '../testing/memory-ports.js';
import type { MemoryQuotaStore } from '../testing/memory-quota-store.js';
import { SeededRandom } from '../testing/seeded-random.js';
import { admitAllWrites } from '../ports/write-guard.js';
import { AssetService } from './service.js';

const OWNER = '0190c000-0000-7000-8000-00000000000a';
const DROP = '0190c000-0000-7000-8000-0000000000d1';
const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: 1_000_000 },
  graceMs: 1000,
  federatedShare: 0.25,
  maxOpenUploads: 1000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};

describe('discarding a drop that an adoption takes meanwhile (two processes)', () => {
  it('the discard is refused (404) and the adopted asset stays: never both acknowledged', async () => {
    const ports = createMemoryPorts();
    const clock = new FakeClock(1_000);
    const random = new SeededRandom(5);
    const blobs = new MemoryBlobStore();
    const quota = new QuotaService({ ledger: ports.quota, blobs, clock, random, policy: POLICY });
    const assets = new AssetService({
      assets: ports.quota,
      quota,
      sessions: ports.quota,
      writeGuard: admitAllWrites,
      clock,
    });
    (ports.quota as unknown as MemoryQuotaStore).assets.set(DROP, {
      id: DROP,
      ownerId: OWNER,
      uploaderId: OWNER,
      state: 'pending_drop',
      createdAt: 1_000,
      trashedAt: null,
      dropExpiresAt: 100_000,
      blobs: [],
    });
    // Another process adopts it right after this one read it as pending.
    const read = ports.quota.findAsset.bind(ports.quota);
    ports.quota.findAsset = async (id) => {
      const found = await read(id);
      ports.quota.findAsset = read;
      expect(await ports.quota.adoptDrop(id, clock.now())).toBe(true);
      return found;
    };
    expect(await assets.discardDrop({ accountId: OWNER }, DROP)).toMatchObject({ ok: false, code: 'error.not_found' });
    expect(await read(DROP)).toMatchObject({ state: 'live' });
  });
});
