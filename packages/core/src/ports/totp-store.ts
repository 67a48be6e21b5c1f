/**
 * One account's second factor as stored. "None" is the absence of a row. The secret is only ever
 * held sealed under the server key; the store never sees it in the clear.
 */
export interface TotpEnrollmentRecord {
  readonly accountId: string;
  readonly state: 'pending' | 'confirmed';
  /** The TOTP secret sealed by core (AES-GCM under the server key, bound to the account id). */
  readonly sealedSecret: string;
  /** The highest step ever accepted for this factor (the replay ledger); null while pending. */
  readonly highestUsedStep: number | null;
  readonly createdAt: number;
  readonly confirmedAt: number | null;
}

/** A sign-in challenge. Only the SHA-256 of the challenge is stored, never the challenge itself. */
export interface TotpChallengeRecord {
  /** Hex SHA-256 of the 32 challenge bytes. */
  readonly idHash: string;
  readonly accountId: string;
  readonly expiresAt: number;
  /** Code checks made against this challenge so far. */
  readonly attempts: number;
}

/**
 * The second-factor store: enrollments with their replay ledger, and sign-in challenges with
 * their attempt counters. Every method is atomic on its own; each conditional one changes nothing
 * and returns false when its condition does not hold. "Not found" is null.
 */
export interface TotpStore {
  findTotpEnrollment(accountId: string): Promise<TotpEnrollmentRecord | null>;
  /**
   * Inserts the account's pending enrollment, or replaces a pending one (a fresh secret). False,
   * and nothing changed, when the account has a confirmed factor.
   */
  savePendingTotp(pending: { accountId: string; sealedSecret: string; at: number }): Promise<boolean>;
  /**
   * Pending -> confirmed, with `step` as the highest used step, only if the pending secret is still
   * `sealedSecret` (so a concurrent re-enrollment cannot get confirmed by a code for the old secret).
   */
  confirmTotp(confirm: { accountId: string; sealedSecret: string; step: number; at: number }): Promise<boolean>;
  /**
   * Compare-and-set: the highest used step becomes `step` only if core's `usableStep(row, step, at)`
   * holds for the row as it is inside the store's transaction (confirmed, `step` within one of
   * `at`'s step and above the highest used).
   */
  advanceTotpStep(accountId: string, step: number, at: number): Promise<boolean>;
  /** Deletes a confirmed factor under the same compare-and-set as {@link advanceTotpStep}. */
  removeTotp(accountId: string, step: number, at: number): Promise<boolean>;
  createTotpChallenge(challenge: TotpChallengeRecord): Promise<void>;
  /**
   * Adds one attempt to the challenge and returns it as it is after the increment; null when it
   * is unknown or already consumed. Expiry is judged by core, not here.
   */
  countTotpChallengeAttempt(idHash: string): Promise<TotpChallengeRecord | null>;
  /** Deletes the challenge. True only for the one caller that deleted it (single use). */
  consumeTotpChallenge(idHash: string): Promise<boolean>;
  /** Deletes the challenges core's TOTP_CHALLENGE_LAPSED takes at `now`; returns how many went. */
  purgeTotpChallenges(now: number): Promise<number>;
}
