/** A revoke-all challenge as stored: only the SHA-256 (hex) of the 32 challenge bytes is kept. */
export interface RevokeAllChallenge {
  readonly challengeHash: string;
  readonly accountId: string;
  readonly expiresAt: number;
}

/** Whether one more challenge may be stored now; when not, how long until the oldest live one expires. */
export type RevokeAllAdmission =
  | { readonly admitted: true }
  | { readonly admitted: false; readonly retryAfterS: number };

/** Single-use challenges for the revoke-all proof (spec §7.8). */
export interface RevokeAllChallengeStore {
  /**
   * In one atomic step (serialised per account): reads the expiries of the account's stored
   * challenges, asks `admit` (core's decision), and stores the challenge only when it admits it.
   * Returns what `admit` answered. The challenges of any account that core's
   * REVOKE_ALL_CHALLENGE_LAPSED takes at `now` are dropped on the way.
   */
  insertRevokeAllChallenge(
    challenge: RevokeAllChallenge,
    now: number,
    admit: (expiries: readonly number[]) => RevokeAllAdmission,
  ): Promise<RevokeAllAdmission>;
  /**
   * Removes the challenge and returns it as it was (expired or not); null when unknown or already
   * consumed. Atomic: two concurrent calls for one hash never both get it.
   */
  consumeRevokeAllChallenge(challengeHash: string): Promise<RevokeAllChallenge | null>;
}
