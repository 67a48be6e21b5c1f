import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../encoding/bytes.js';
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
const HARD = 1000;
const OVERDRAFT = 50;
const POLICY: QuotaPolicy = {
  defaults: { soft: null, hard: HARD },
  graceMs: 1000,
  federatedShare: 0.25,
  maxOpenUploads: 1000,
  followUpMs: 900_000,
  followUpOverdraft: OVERDRAFT,
};

/*
 * AssetService.replaceMetadata once admitted the edit (QuotaService.admit, a read) outside the
 * store's transaction that charged it, so follow-up edits in several processes at once each saw
 * room under the line and all charged: 5 x 20 bytes took used from 1000 to 1100, past hard 1000 +
 * overdraft 50. The store now decides the edit in that transaction (decideMetadataReplace), as it
 * decides an upload opening.
 */
describe('follow-up metadata edits in several processes at once', () => {
  it('never take used past hard limit + overdraft together, and the refused edits leave no bytes behind', async () => {
    const ports = createMemoryPorts();
    const store = ports.quota as unknown as MemoryQuotaStore;
    const clock = new FakeClock(10_000);
    const blobs = new MemoryBlobStore();
    // GraceExpired (hard reached long ago), and a trash a moment ago: edits are follow-ups.
    store.accounts.set(OWNER, {
      accountId: OWNER,
      charged: HARD,
      reserved: 0,
      limits: null,
      hardSince: 1,
      suspendedAt: null,
      sponsorId: null,
      trashActivityAt: 9_999,
    });
    const ids = [1, 2, 3, 4, 5].map((i) => `0190c000-0000-7000-8000-00000000010${i}`);
    for (const id of ids)
      store.assets.set(id, {
        id,
        ownerId: OWNER,
        uploaderId: OWNER,
        state: 'live',
        createdAt: 1,
        trashedAt: null,
        dropExpiresAt: null,
        blobs: [],
      });
    // Five processes (services over the one store), one edit of 20 bytes each: two fit (1040), a third would pass 1050.
    const processes = ids.map((_, i) => {
      const quota = new QuotaService({
        ledger: ports.quota,
        blobs,
        clock,
        random: new SeededRandom(i + 1),
        policy: POLICY,
      });
      return new AssetService({ assets: ports.quota, quota, sessions: ports.quota, writeGuard: admitAllWrites, clock });
    });
    const answers = await Promise.all(
      processes.map((p, i) =>
        p.replaceMetadata({ accountId: OWNER }, ids[i]!, new Uint8Array(20).fill(i + 1), {
          protocolVersion: '1.0',
          intentId: null,
        }),
      ),
    );
    const used = store.accounts.get(OWNER)!.charged + store.accounts.get(OWNER)!.reserved;
    expect({ used, admitted: answers.filter((a) => a.ok).length }).toEqual({ used: HARD + 40, admitted: 2 });
    for (const a of answers)
      if (!a.ok) expect(a).toMatchObject({ code: 'error.quota.write_refused', data: { state: 'GraceExpired' } });
    // Each refused edit's bytes were committed before the store refused them: they went again (handoff.ts).
    const kept = await Promise.all(ids.map((_, i) => blobs.has(sha256Hex(new Uint8Array(20).fill(i + 1)))));
    expect(kept).toEqual(answers.map((a) => a.ok));
    expect(kept.map((k, i) => k === store.blobs.has(sha256Hex(new Uint8Array(20).fill(i + 1))))).toEqual(
      ids.map(() => true),
    );
  });
});
