/**
 * Named leases in the database, so that one process of a deployment at a time runs a periodic job
 * (operations/lease.ts decides). The store applies core's rule atomically: concurrent callers, from
 * any process or host, each see what the previous one wrote.
 */
export interface LeaseStore {
  /**
   * Applies core's `decideLease(current, holder, now, ttlMs)` to the lease `name` in one transaction
   * and writes what it decides. True when `holder` holds it (until `now + ttlMs`) afterwards.
   */
  takeLease(name: string, holder: string, now: number, ttlMs: number): Promise<boolean>;
  /** Ends the lease if core's `mayReleaseLease` lets `holder` end it (its own); otherwise nothing. */
  releaseLease(name: string, holder: string): Promise<void>;
}
