import type {
  AddressGuessState,
  CheckedBy,
  PasswordCheckAdmission,
  PasswordCheckClaim,
  SignInTicketRecord,
  SourceFailureState,
} from '../sign-in-throttle/rules.js';

/**
 * The password-guessing counts (per address, per client address, per sign-in ticket) and the
 * tickets themselves, shared by every process over the database. The rule is core's: stores keep
 * the state and apply `claimPasswordCheck` and `refundPasswordCheck` atomically.
 */
export interface SignInThrottleStore {
  /**
   * Claims one password check: reads the address's record, the source's record and the presented
   * ticket with its account's credentials stamp, applies core's `claimPasswordCheck` to them in one
   * atomic step (concurrent claims, from any process, each see what the previous one left) and
   * writes what it decides. Called before the password is hashed; admitted, the check already
   * counts as a wrong password.
   */
  claimPasswordCheck(claim: PasswordCheckClaim): Promise<PasswordCheckAdmission>;
  /** The check claimed as `claim` found the right password: applies core's `refundPasswordCheck` atomically. */
  refundPasswordCheck(claim: PasswordCheckClaim, by: CheckedBy): Promise<void>;
  /**
   * Stores a new ticket (its hash only), dropping on the way the tickets core's
   * SIGN_IN_TICKETS_DROPPED takes for it (parameters: its `accountId`, and its `issuedAt` as `now`).
   */
  issueSignInTicket(ticket: SignInTicketRecord): Promise<void>;
  /** Voids every ticket of the account (password change, revoke-all, lock, deletion, restore). Returns how many. */
  voidSignInTickets(accountId: string): Promise<number>;
  /** Voids every ticket of every account (a restore closes them all). Returns how many. */
  voidAllSignInTickets(): Promise<number>;
  /** The address's record; null when none. */
  findAddressGuesses(addressKey: string): Promise<AddressGuessState | null>;
  /** The source's record; null when none. */
  findSourceFailures(sourceKey: string): Promise<SourceFailureState | null>;
  /** A stored ticket by its hash; null when none (voided, or never issued). */
  findSignInTicket(ticketHash: string): Promise<SignInTicketRecord | null>;
}
