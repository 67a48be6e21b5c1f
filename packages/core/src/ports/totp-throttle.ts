import type { TotpThrottleState } from '../second-factor/throttle.js';

/**
 * Per-account record of wrong second-factor codes, shared by every process over the database.
 * The rule is core's: stores only keep the state and apply `recordWrongCode` atomically.
 */
export interface TotpThrottleStore {
  /** The account's recent wrong codes; null when none were ever recorded. */
  findTotpThrottle(accountId: string): Promise<TotpThrottleState | null>;
  /**
   * Applies core's `recordWrongCode(state, at)` to the stored state in one atomic step (concurrent
   * calls, from any process, each count) and returns the state after.
   */
  recordWrongTotpCode(accountId: string, at: number): Promise<TotpThrottleState>;
}
