import type { CodeCheckAdmission, TotpThrottleState } from '../second-factor/throttle.js';

/**
 * Per-account record of wrong second-factor codes, shared by every process over the database.
 * The rule is core's: stores only keep the state and apply `claimCodeCheck` and `refundCodeCheck`
 * atomically.
 */
export interface TotpThrottleStore {
  /** The account's recent wrong codes; null when none were ever recorded. */
  findTotpThrottle(accountId: string): Promise<TotpThrottleState | null>;
  /**
   * Claims one code check at `at`: applies core's `claimCodeCheck(state, at)` to the stored state in
   * one atomic step (concurrent calls, from any process, each see the state the previous one left)
   * and writes what it decides. Called before a code is compared; admitted, the check already
   * counts as a wrong code.
   */
  claimTotpCodeCheck(accountId: string, at: number): Promise<CodeCheckAdmission>;
  /** A check claimed at `at` was a right code: applies core's `refundCodeCheck(state, at)` atomically. */
  refundTotpCodeCheck(accountId: string, at: number): Promise<void>;
}
