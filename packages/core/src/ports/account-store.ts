export interface AccountRecord {
  readonly id: string;
  /** The login address as registered (trimmed); null for an OpenID account without a verified email. */
  readonly address: string | null;
  /** Lower-cased address: the uniqueness key (null with the address). */
  readonly addressKey: string | null;
  readonly passwordHash: string | null;
  readonly displayName: string | null;
  readonly createdAt: number;
  readonly lockedAt: number | null;
  /**
   * When the credentials last changed (password change, revoke-all, second-factor recovery, lock):
   * anything in flight opened before it is ended (core's outlivesCredentialChange). Null: never.
   */
  readonly credentialsChangedAt: number | null;
  /**
   * When the account was deleted (core's account-deletion): its row stays, cleared, so its id and
   * handle stay taken. Absent or null: a live account.
   */
  readonly deletedAt?: number | null;
}

/**
 * A password change. The caller's session stays open under its id with `tokenHash`; its access
 * floor moves past every access token issued to it so far: to `at`, or past its last recorded
 * issuance when that is later (a refresh that recorded its issuance, under the old token, between
 * `at` and the change's commit issued a token at that instant, which must be refused too).
 */
export interface PasswordChange {
  readonly accountId: string;
  readonly passwordHash: string;
  /**
   * The caller's session: kept open under its id, with a fresh token, and authenticated at `at`
   * (the current password it just proved is a credential proof like a sign-in).
   */
  readonly sessionId: string;
  readonly tokenHash: string;
  readonly at: number;
  /**
   * The account's `credentialsChangedAt` the current password was checked under: the change is
   * made only while it still is, so of two changes judged against the same password one wins.
   */
  readonly credentialsChangedAt: number | null;
}

/** Accounts. "Not found" is null. */
export interface AccountStore {
  /** Inserts unless the address key is taken. */
  createAccount(account: AccountRecord): Promise<'created' | 'address_taken'>;
  findAccountByAddress(addressKey: string): Promise<AccountRecord | null>;
  findAccountById(id: string): Promise<AccountRecord | null>;
  /** Returns the updated account, or null when it does not exist. */
  setDisplayName(id: string, displayName: string | null): Promise<AccountRecord | null>;
  /** Sets or clears the lock. Locking is a credential change: it also stamps `credentialsChangedAt` with `lockedAt`. */
  setLocked(id: string, lockedAt: number | null): Promise<boolean>;
  /**
   * Atomically: store the new password hash, close the sessions core's PASSWORD_CHANGE_CLOSES takes
   * (parameters `accountId` and `sessionId` from the change: every other open session of the
   * account), and give the caller's session a new token hash and an access floor of `at` (access tokens issued
   * before it are refused), and stamp the account's `credentialsChangedAt` with `at`. Returns false
   * (and changes nothing) when the caller's session is not open, or when the account's
   * `credentialsChangedAt` is no longer `change.credentialsChangedAt`.
   */
  changePassword(change: PasswordChange): Promise<boolean>;
}
