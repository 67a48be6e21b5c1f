/** One account's handle (the local part; the host is the server's) and whether it is public. */
export interface HandleRecord {
  readonly accountId: string;
  readonly user: string;
  /** Opted in to the anonymous record (WebFinger). False until the owner publishes. */
  readonly published: boolean;
  readonly claimedAt: number;
  /**
   * When its account was deleted (null while it lives): the record stays so the name can never be
   * claimed again, and no lookup answers it (core's `handleInService`).
   */
  readonly retiredAt: number | null;
}

/** `claimed` also answers a repeat claim of the same user by the same account. */
export type ClaimOutcome = 'claimed' | 'taken' | 'fixed';

/**
 * Handles and the opt-in public record. A user name belongs to at most one account and an account
 * has at most one handle, for good: both hold atomically in the store. "Not found" is null.
 */
export interface HandleStore {
  /**
   * Gives `user` to the account unless another account holds it (`taken`) or the account already
   * has another handle (`fixed`); the same claim again is `claimed` and changes nothing.
   */
  claimHandle(claim: { accountId: string; user: string; at: number }): Promise<ClaimOutcome>;
  findHandleByAccount(accountId: string): Promise<HandleRecord | null>;
  findHandleByUser(user: string): Promise<HandleRecord | null>;
  /** Sets the opt-in flag; false (nothing changed) when the account has no handle. */
  setHandlePublished(accountId: string, published: boolean): Promise<boolean>;
}
