/** A revoke-all challenge as stored: only the SHA-256 (hex) of the 32 challenge bytes is kept. */
export interface RevokeAllChallenge {
  readonly challengeHash: string;
  readonly accountId: string;
  readonly expiresAt: number;
}

/** Single-use challenges for the revoke-all proof (contract 5.10). */
export interface RevokeAllChallengeStore {
  /** Stores a challenge; challenges of any account already expired at `now` may be dropped. */
  insertRevokeAllChallenge(challenge: RevokeAllChallenge, now: number): Promise<void>;
  /**
   * Removes the challenge and returns it as it was (expired or not); null when unknown or already
   * consumed. Atomic: two concurrent calls for one hash never both get it.
   */
  consumeRevokeAllChallenge(challengeHash: string): Promise<RevokeAllChallenge | null>;
}
