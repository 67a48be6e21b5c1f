import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blobsAgree, verifyBlobs, type LedgerBlob } from './verify.js';

const h = (n: number) => n.toString(16).padStart(64, '0');
const pages = (ledger: LedgerBlob[]) => async (after: string | null, limit: number) =>
  [...ledger]
    .sort((a, b) => (a.contentHash < b.contentHash ? -1 : 1))
    .filter((b) => after === null || b.contentHash > after)
    .slice(0, limit);
async function* listing(objects: LedgerBlob[]) {
  yield* [...objects].sort((a, b) => (a.contentHash < b.contentHash ? -1 : 1));
}

describe('verifyBlobs', () => {
  it('names ledger entries without objects, objects without entries, and sizes that differ', async () => {
    const ledger = [
      { contentHash: h(1), size: 10 },
      { contentHash: h(2), size: 20 },
      { contentHash: h(4), size: 40 },
    ];
    const objects = [
      { contentHash: h(2), size: 21 },
      { contentHash: h(3), size: 30 },
      { contentHash: h(4), size: 40 },
    ];
    const r = await verifyBlobs(pages(ledger), listing(objects), 1);
    expect(r).toEqual({
      ledgerEntries: 3,
      objects: 3,
      missing: [{ contentHash: h(1), size: 10 }],
      unreferenced: [{ contentHash: h(3), size: 30 }],
      wrongSize: [{ contentHash: h(2), ledgerSize: 20, storedSize: 21 }],
    });
    expect(blobsAgree(r)).toBe(false);
    expect(blobsAgree(await verifyBlobs(pages(ledger), listing(ledger), 2))).toBe(true);
  });

  it('agrees with a set comparison for any ledger, store and page size', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.nat(50)),
        fc.uniqueArray(fc.nat(50)),
        fc.integer({ min: 1, max: 7 }),
        async (inLedger, inStore, pageSize) => {
          const ledger = inLedger.map((n) => ({ contentHash: h(n), size: n }));
          const store = inStore.map((n) => ({ contentHash: h(n), size: n }));
          const r = await verifyBlobs(pages(ledger), listing(store), pageSize);
          expect(r.missing.map((b) => b.contentHash).sort()).toEqual(
            inLedger
              .filter((n) => !inStore.includes(n))
              .map(h)
              .sort(),
          );
          expect(r.unreferenced.map((b) => b.contentHash).sort()).toEqual(
            inStore
              .filter((n) => !inLedger.includes(n))
              .map(h)
              .sort(),
          );
          expect(r).toMatchObject({ ledgerEntries: inLedger.length, objects: inStore.length, wrongSize: [] });
        },
      ),
    );
  });
});
