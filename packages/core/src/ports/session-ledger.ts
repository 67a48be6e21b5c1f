import type { AccountRecord } from './account-store.js';

/** How the person proved who they are when the session was opened. */
export type SignInMethod = 'password' | 'oidc';

export interface SessionRecord {
  readonly id: string;
  readonly accountId: string;
  /** Hex SHA-256 of the session token. The token itself is never stored. */
  readonly tokenHash: string;
  readonly cohortHash: string | null;
  /** Issuance time: the hard expiry counts from here and never moves. */
  readonly createdAt: number;
  /** Last successful access-token issuance: the sliding idle clock. */
  readonly refreshedAt: number;
  /** Coalesced "last seen" time, written at most once a minute. */
  readonly lastUsedAt: number;
  /** Access tokens issued before this instant are refused (set by a password change). */
  readonly accessFloor: number;
  readonly closedAt: number | null;
  /**
   * When the holder last proved a credential on this session (sign-in, second factor, recovery,
   * OpenID, reauthenticate): what "recent authentication" is judged on. Sessions from before the
   * column existed read 0 (never recently).
   */
  readonly authenticatedAt: number;
  /** How the session was opened; stores read an absent value as 'password'. */
  readonly method?: SignInMethod;
}

/** The account fields an authenticated request may use without another read (no secrets). */
export interface AccountSummary extends Pick<AccountRecord, 'id' | 'address' | 'displayName' | 'createdAt'> {
  /** The user part of the account's claimed handle (null when none), read in the same join. */
  readonly handleUser: string | null;
}

/**
 * What an authenticated request needs to know about its session, with the session's account:
 * read together, in one statement, on every authenticated request.
 */
export interface SessionAccess {
  readonly accountId: string;
  readonly accessFloor: number;
  readonly closedAt: number | null;
  readonly lastUsedAt: number;
  readonly account: AccountSummary;
}

/** The session ledger. Read on every authenticated request. "Not found" is null. */
export interface SessionLedger {
  /**
   * Opens a session (the only way one is written): inserts a sign-in's session only while the account's `credentialsChangedAt` is still
   * `credentialsChangedAt`, the value the sign-in judged its credential against; false, and nothing
   * inserted, when a password change, revoke-all, recovery or lock committed in between (it closed
   * every session it saw and ended what was in flight, and this one must not outlive it). Atomic
   * with those changes: on PostgreSQL the account's row is read under FOR SHARE.
   */
  openSession(session: SessionRecord, credentialsChangedAt: number | null): Promise<boolean>;
  findSessionById(id: string): Promise<SessionRecord | null>;
  /**
   * The session's access state joined with its account (null when either is missing). This is the
   * per-request read, so adapters make it one prepared statement.
   */
  findSessionAccess(id: string): Promise<SessionAccess | null>;
  findSessionByTokenHash(tokenHash: string): Promise<SessionRecord | null>;
  /**
   * Restarts the idle clock of an open session whose token is still `tokenHash`, keeping the later
   * instant when two refreshes cross, and sets last-used to `at` only if the stored value is at or
   * before `staleBefore` (the same coalescing as `touchSession`). False when no such session
   * matched (closed since it was read, or re-keyed by a password change): the caller must not hand
   * out an access token for it. Compare-and-set: the refresh judged the session by that token.
   */
  recordIssuance(id: string, tokenHash: string, at: number, staleBefore: number): Promise<boolean>;
  /** Sets last-used to `at` only if the stored value is at or before `staleBefore` (coalescing). */
  touchSession(id: string, at: number, staleBefore: number): Promise<void>;
  /** Closes one open session of the account. False when there is none to close. */
  closeSession(accountId: string, id: string, at: number): Promise<boolean>;
  /**
   * Revoke-all, a credential change: closes the sessions core's CREDENTIAL_CHANGE_CLOSES takes
   * (parameter `accountId`: every open session of the account) and, in the same step, marks the
   * account's credentials changed at `at` (see AccountRecord.credentialsChangedAt). Returns how many
   * it closed.
   */
  closeAllSessions(accountId: string, at: number): Promise<number>;
  /** Records a fresh proof of a credential on an open session. False when it is not open. */
  recordAuthentication(id: string, at: number): Promise<boolean>;
  /** Sessions of the account not yet closed (expiry is judged by core). */
  listOpenSessions(accountId: string): Promise<SessionRecord[]>;
}
