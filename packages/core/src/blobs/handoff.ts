import { guard } from '../errors.js';
import type { BlobStore, QuarantinedBlob } from '../ports/blob-store.js';
import type { QuotaLedger } from '../ports/quota-ledger.js';

/** Whether the ledger holds a row for the hash now (read fresh: never a cached answer). */
export type LedgerHolds = (contentHash: string) => Promise<boolean>;

/** The ledger's answer to `LedgerHolds`, one read per question; a failed read is a store fault. */
export function ledgerHolds(ledger: Pick<QuotaLedger, 'findBlob'>): LedgerHolds {
  return async (contentHash) =>
    (await guard('error.store.unavailable', 'quota ledger read', () => ledger.findBlob(contentHash))) !== null;
}

/*
 * How a writer and the sweep hand a blob over without losing it (two processes, no shared lock).
 *
 * A writer (upload finalize, a whole-blob write) commits the bytes to their address, writes its
 * ledger row (W), and only then checks that the bytes are at the address (H), committing them
 * again from the staging it still holds if they are not; only after that does it discard staging.
 * The sweep, for a hash whose row it removed, moves the bytes into quarantine (Q), reads the
 * ledger again (R), and puts them back if a row exists now, else drops the quarantined copy.
 *
 * Each side acts before it checks, so they cannot both miss each other (Dekker): if R ran before
 * W, then Q ran before W and so before H, and H sees the bytes gone and commits them again; if R
 * ran after W, R sees the row and the sweep puts the bytes back. The sweep's leftover settling and
 * the staging sweep follow the same rule: a quarantined copy is dropped only on a ledger read
 * made after it was quarantined, and staged bytes of a written row are discarded only after a
 * check of the address made after that row was written. Quarantined copies are unique per
 * quarantine, so one sweep never drops a copy another sweep still has to put back.
 *
 * While bytes sit in quarantine they are absent at their address; the sweep first reads the
 * ledger (a row written since its own sweep leaves the blob alone), so that window opens only when
 * a writer races it. It closes when the sweep reads the ledger again, or, if the sweep died before
 * that read, at the first of: a read of the blob, `blobs verify`, a backup (each puts back what
 * the ledger holds a row for), the next sweep. Those only ever put back, never drop, so they may
 * run beside a sweep: a copy is put back only on a ledger read made after it was found, which
 * names the blob; at worst the sweep drops what a writer will commit again (the Dekker argument
 * above), or both put the same copy back, which the store makes harmless (ports/blob-store.ts).
 * A row removed between that read and the put-back leaves the bytes at their address with no row,
 * as a writer's late commit can: never a loss, and `blobs verify` names them.
 */

/**
 * The writer's side, after its ledger write: the blob is at its address (committed again from
 * `stagingId` if a sweep took it meanwhile and the ledger still has a row for it), then the staged
 * bytes go. Also how the staging sweep lets go of a finalized session's bytes.
 */
export async function releaseStaging(
  blobs: BlobStore,
  holds: LedgerHolds,
  stagingId: string,
  contentHash: string,
): Promise<void> {
  if (!(await blobs.has(contentHash)) && (await holds(contentHash))) await blobs.commit(stagingId, contentHash);
  await blobs.discard(stagingId);
}

/**
 * The sweep's side, for a hash whose ledger row it removed: the bytes leave only if, once moved
 * into quarantine, the ledger still has no row for them. Answers whether they left.
 */
export async function collectBlob(blobs: BlobStore, holds: LedgerHolds, contentHash: string): Promise<boolean> {
  // A writer merged the hash again since the ledger's sweep: leave it at its address.
  if (await holds(contentHash)) return false;
  const aside = await blobs.quarantine(contentHash);
  if (aside === null) return false;
  return settleQuarantined(blobs, holds, aside);
}

/**
 * A quarantined copy is put back when the ledger has a row for its hash, read now, else dropped.
 * Answers whether it was dropped.
 */
export async function settleQuarantined(
  blobs: BlobStore,
  holds: LedgerHolds,
  aside: QuarantinedBlob,
): Promise<boolean> {
  if (await holds(aside.contentHash)) {
    await blobs.unquarantine(aside);
    return false;
  }
  await blobs.dropQuarantined(aside);
  return true;
}

/**
 * A read's side, for a blob it may read that is absent at its address: its quarantined copies go
 * back when the ledger has a row for the hash, read after they were found (a sweep that died
 * between its quarantine and its second ledger read left them). Never drops anything. Answers
 * whether a copy was put back, so the caller reads again.
 */
export async function putBackQuarantined(blobs: BlobStore, holds: LedgerHolds, contentHash: string): Promise<boolean> {
  const copies = await blobs.quarantinedCopies(contentHash);
  if (copies.length === 0 || !(await holds(contentHash))) return false;
  for (const aside of copies) await blobs.unquarantine(aside);
  return true;
}

/**
 * The sweep's first step without its drops, for checks that compare the store with the ledger
 * (`blobs verify`, a backup): every quarantined copy whose hash the ledger holds a row for, read
 * after the copy was listed, goes back; the rest wait for the next sweep. Answers how many went back.
 */
export async function putBackAllQuarantined(blobs: BlobStore, holds: LedgerHolds): Promise<number> {
  let putBack = 0;
  for (const q of await quarantinedNow(blobs)) {
    if (!(await holds(q.contentHash))) continue;
    await blobs.unquarantine(q);
    putBack++;
  }
  return putBack;
}

/**
 * The sweep's first step: every quarantined copy a stopped sweep left is settled as the sweep
 * settles its own (`settleQuarantined`: back when the ledger names it, else dropped).
 */
export async function settleAllQuarantined(blobs: BlobStore, holds: LedgerHolds): Promise<void> {
  for (const q of await quarantinedNow(blobs)) await settleQuarantined(blobs, holds, q);
}

/** The quarantined copies as listed now, read whole before any is moved (a listing is not a snapshot). */
async function quarantinedNow(blobs: BlobStore): Promise<QuarantinedBlob[]> {
  const aside: QuarantinedBlob[] = [];
  for await (const q of blobs.listQuarantined()) aside.push(q);
  return aside;
}
