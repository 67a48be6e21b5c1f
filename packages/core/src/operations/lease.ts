/**
 * Leases: how the processes of one deployment (on one host or many, over one database) agree that
 * only one of them runs a periodic job at a time, such as the staging sweep. The rule lives here;
 * a store reads the lease, asks `decideLease` and writes what it decides in one transaction.
 */

/** Who holds a named lease, and until when (epoch ms). */
export interface LeaseRecord {
  readonly holder: string;
  readonly expiresAt: number;
}

/**
 * The lease after `holder` asks for it at `now` for `ttlMs`, or null when it is refused: a lease
 * nobody holds, or whose holder let it lapse (a process that died mid-job), goes to the asker;
 * its own holder renews it; another holder's live lease is refused.
 */
export function decideLease(
  current: LeaseRecord | null,
  holder: string,
  now: number,
  ttlMs: number,
): LeaseRecord | null {
  if (current !== null && current.holder !== holder && current.expiresAt > now) return null;
  return { holder, expiresAt: now + ttlMs };
}

/** Whether `holder` may end the lease: only its own, never one another process took over since. */
export function mayReleaseLease(current: LeaseRecord | null, holder: string): boolean {
  return current !== null && current.holder === holder;
}
