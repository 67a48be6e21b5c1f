import type { BlobStore, ListedBlob } from '../ports/blob-store.js';
import type { QuotaLedger } from '../ports/quota-ledger.js';
import { ledgerHolds, putBackAllQuarantined } from './handoff.js';

/** A ledger entry as the check reads it. */
export interface LedgerBlob {
  readonly contentHash: string;
  readonly size: number;
}

/** What `blobs verify` found: the ledger and the store, compared hash by hash. */
export interface BlobVerifyReport {
  readonly ledgerEntries: number;
  readonly objects: number;
  /** In the ledger, not in the store: lost bytes someone was charged for, never to be served as empty. */
  readonly missing: readonly LedgerBlob[];
  /** In the store, not in the ledger: bytes nobody is charged for (a finalize in flight, or a leak). */
  readonly unreferenced: readonly ListedBlob[];
  /** In both, of another size than the ledger says: damaged or replaced. */
  readonly wrongSize: readonly {
    readonly contentHash: string;
    readonly ledgerSize: number;
    readonly storedSize: number;
  }[];
}

/** True when the store and the ledger agree entirely. */
export function blobsAgree(r: BlobVerifyReport): boolean {
  return r.missing.length === 0 && r.unreferenced.length === 0 && r.wrongSize.length === 0;
}

/**
 * Compares the ledger (read in keyset pages, ascending hash) with the store's listing (ascending
 * hash) in one merge pass, so neither is held whole: a deployment's millions of blobs need only a
 * page of each in memory. Findings are kept (an operator acts on each).
 */
export async function verifyBlobs(
  ledgerPage: (after: string | null, limit: number) => Promise<readonly LedgerBlob[]>,
  objects: AsyncIterable<ListedBlob>,
  pageSize = 1000,
): Promise<BlobVerifyReport> {
  const missing: LedgerBlob[] = [];
  const unreferenced: ListedBlob[] = [];
  const wrongSize: { contentHash: string; ledgerSize: number; storedSize: number }[] = [];
  let page: readonly LedgerBlob[] = await ledgerPage(null, pageSize);
  let at = 0;
  let ledgerEntries = 0;
  let objectCount = 0;
  /** The next ledger entry, paging on; null once the ledger is read to its end. */
  const peek = async (): Promise<LedgerBlob | null> => {
    if (at < page.length) return page[at]!;
    if (page.length < pageSize) return null;
    page = await ledgerPage(page[page.length - 1]!.contentHash, pageSize);
    at = 0;
    return page[0] ?? null;
  };
  for await (const object of objects) {
    objectCount++;
    let entry = await peek();
    while (entry !== null && entry.contentHash < object.contentHash) {
      missing.push(entry);
      ledgerEntries++;
      at++;
      entry = await peek();
    }
    if (entry !== null && entry.contentHash === object.contentHash) {
      if (entry.size !== object.size)
        wrongSize.push({ contentHash: entry.contentHash, ledgerSize: entry.size, storedSize: object.size });
      ledgerEntries++;
      at++;
    } else {
      unreferenced.push(object);
    }
  }
  for (let entry = await peek(); entry !== null; entry = await peek()) {
    missing.push(entry);
    ledgerEntries++;
    at++;
  }
  return { ledgerEntries, objects: objectCount, missing, unreferenced, wrongSize };
}

/** What `blobs verify` found, after putting back `putBack` quarantined blobs the ledger names. */
export interface BlobStoreCheck extends BlobVerifyReport {
  readonly putBack: number;
}

/**
 * `blobs verify`: what a sweep that stopped midway left in quarantine while the ledger names it
 * goes back to its address first (blobs/handoff.ts; put back only, never dropped, so a sweep may
 * run meanwhile), so such a blob is neither reported missing nor sent to a backup's restore; then
 * the ledger and the store are compared.
 */
export async function checkBlobStore(
  ledger: Pick<QuotaLedger, 'findBlob' | 'listBlobs'>,
  blobs: BlobStore,
  pageSize = 1000,
): Promise<BlobStoreCheck> {
  const putBack = await putBackAllQuarantined(blobs, ledgerHolds(ledger));
  const report = await verifyBlobs((after, limit) => ledger.listBlobs(after, limit), blobs.list(), pageSize);
  return { ...report, putBack };
}
