import type { IntakeOutcome } from '../ports/federated-intakes.js';

/**
 * May a federated cache fill of `size` bytes open while `pending` bytes from the same peer are
 * already on their way in? Only within `room`: the (receiver, peer) budget less what is cached.
 * Every store applies this inside the transaction that records the intake.
 */
export function decideIntake(pending: number, size: number, room: number | null): IntakeOutcome {
  return room === null || pending + size <= room ? 'reserved' : 'over_budget';
}

/** Bytes already cached for the receiver from this peer, from its charged blobs. */
export function cachedFromPeer(blobs: readonly { peer: string | null; size: number }[], peer: string): number {
  let n = 0;
  for (const b of blobs) if (b.peer === peer) n += b.size;
  return n;
}
