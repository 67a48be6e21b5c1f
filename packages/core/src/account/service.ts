import { decideOwnIdentity } from '../sponsorship/rules.js';
import { uuidv7 } from '../encoding/uuid.js';
import { guard, ok, refuse, type Refusal, type Result } from '../errors.js';
import type { AccountRecord, AccountStore } from '../ports/account-store.js';
import type { AccountSummary } from '../ports/session-ledger.js';
import type { Clock } from '../ports/clock.js';
import type { PasswordHasher } from '../ports/password-hasher.js';
import type { Random } from '../ports/random.js';
import {
  checkPassword,
  couldBePassword,
  findAccountByAddress,
  holdsInvisible,
  normalizeAddress,
  normalizeDisplayName,
} from '../profile/rules.js';
import { newSessionToken, type Principal, type SessionService, type TokenPair } from '../session/service.js';
import { toBase64url } from '../encoding/bytes.js';
import type { RegistrationGate } from '../registration/service.js';
import type { SignInThrottleStore } from '../ports/sign-in-throttle.js';
import {
  DEFAULT_SOURCE_FAILURES,
  sessionCountKey,
  type CheckedBy,
  type PasswordCheckClaim,
} from '../sign-in-throttle/rules.js';
import { signInTicketHash } from '../sign-in-throttle/ticket.js';

/**
 * What happens after a correct password. Without a confirmed second factor the session opens at
 * once; with one, the gate hands back a challenge and nothing is opened (the TOTP module
 * implements it).
 */
export interface LoginGate {
  afterPassword(
    account: AccountRecord,
  ): Promise<
    | { kind: 'open' }
    | { kind: 'challenge'; challenge: string; expiresIn: number; accountId: string }
    | { kind: 'throttled'; retryAfterS: number }
  >;
}

export interface AccountServiceDeps {
  readonly accounts: AccountStore;
  readonly sessions: SessionService;
  readonly hasher: PasswordHasher;
  readonly clock: Clock;
  readonly random: Random;
  readonly loginGate?: LoginGate;
  /** Who may create an account (SVC_REGISTRATION); asked before anything is hashed or written. */
  readonly registration: RegistrationGate;
  /** The password-guessing counts; without it logins are not throttled (some unit tests). */
  readonly signIn?: SignInThrottleStore;
  /** Failed sign-ins one client address may have per hour (SVC_SIGNIN_FAILURES_PER_SOURCE). */
  readonly sourceFailureLimit?: number;
}

export interface Profile {
  readonly accountId: string;
  readonly address: string | null;
  readonly displayName: string | null;
  readonly createdAt: number;
  /** The claimed handle's user part when the read that built the profile joined it; undefined when not read. */
  readonly handleUser?: string | null;
}

export type LoginOutcome =
  | { readonly kind: 'session'; readonly pair: TokenPair }
  | { readonly kind: 'challenge'; readonly challenge: string; readonly expiresIn: number; readonly accountId: string };

type Credentials = { address: string; password: string };

/** Where a login comes from and what it carries besides its credentials. */
type LoginContext = {
  cohortHash: string | null;
  /** The sign-in ticket a previous sign-in handed out, if the client kept one. */
  signInTicket?: string | null;
  /** The client address's key (sign-in-throttle/client-address.ts#sourceKey); `unknown` when absent. */
  source?: string;
};

function profileOf(
  a: Pick<AccountSummary, 'id' | 'address' | 'displayName' | 'createdAt'> & { readonly handleUser?: string | null },
): Profile {
  return {
    accountId: a.id,
    address: a.address,
    displayName: a.displayName,
    createdAt: a.createdAt,
    ...(a.handleUser !== undefined ? { handleUser: a.handleUser } : {}),
  };
}

const INVALID = 'The address or password is wrong.';
const NO_LOCAL_PASSWORD = 'This account has no local password; it signs in through its OpenID provider.';

/** Registration, sign-in, re-authentication, password change and the profile. */
export class AccountService {
  readonly #d: AccountServiceDeps;
  #dummyHash: Promise<string> | null = null;

  constructor(deps: AccountServiceDeps) {
    this.#d = deps;
  }

  /** A hash of a random password, verified against when the address is unknown so both paths cost the same. */
  #dummy(): Promise<string> {
    const dummy = (this.#dummyHash ??= this.#d.hasher.hash(toBase64url(this.#d.random.bytes(24))));
    // Refused (load shedding) or failed: the next unknown address tries again rather than inherit it.
    dummy.catch(() => {
      if (this.#dummyHash === dummy) this.#dummyHash = null;
    });
    return dummy;
  }

  /** Registering signs in: the new account gets its first session at once. */
  async register(
    input: Credentials & {
      cohortHash?: string | null /** The client address's key: the hasher's lane. */;
      source?: string;
    },
  ): Promise<
    Result<
      TokenPair,
      | 'error.request.invalid'
      | 'error.auth.weak_password'
      | 'error.auth.user_already_exists'
      | 'error.auth.account_locked'
      | 'error.auth.registration_closed'
    >
  > {
    const address = normalizeAddress(input.address);
    // Asked first: a server that takes no new accounts says so whatever else the request holds.
    const admitted = await this.#d.registration.admit(address.ok ? address.value : null);
    if (!admitted.ok) return admitted;
    if (!address.ok) return address;
    const strength = checkPassword(input.password);
    if (!strength.ok) return strength;
    const lane = input.source ?? 'unknown';
    this.#d.hasher.shedIfFull?.(lane);
    // An account stored before NFC and case folding holds its old key: this spelling must not get a
    // second account beside it (the unique key guards only the new spelling).
    if (address.value.legacyKey !== address.value.key) {
      const holder = await guard('error.store.unavailable', 'reading the account', () =>
        findAccountByAddress(this.#d.accounts, address.value),
      );
      if (holder !== null) return refuse('error.auth.user_already_exists', 'An account with this address exists.');
    }
    const now = this.#d.clock.now();
    const account: AccountRecord = {
      id: uuidv7(now, this.#d.random.bytes(10)),
      address: address.value.address,
      addressKey: address.value.key,
      passwordHash: await this.#d.hasher.hash(input.password, lane),
      displayName: null,
      createdAt: now,
      lockedAt: null,
      credentialsChangedAt: null,
    };
    const created = await guard('error.store.unavailable', 'creating an account', () =>
      this.#d.accounts.createAccount(account),
    );
    if (created === 'address_taken')
      return refuse('error.auth.user_already_exists', 'An account with this address exists.');
    const pair = await this.#d.sessions.open(account, { cohortHash: input.cohortHash ?? null });
    // Only an operator lock can change a new account's credentials in the meantime.
    if (pair === null) return refuse('error.auth.account_locked', 'This account is locked.');
    return ok(pair);
  }

  /** Checks a password; unknown addresses cost one argon2 verification too. */
  async #checkCredentials(credentials: Credentials, lane: string): Promise<AccountRecord | null> {
    if (!couldBePassword(credentials.password)) return null;
    const address = normalizeAddress(credentials.address);
    const account = address.ok
      ? await guard('error.store.unavailable', 'reading the account', () =>
          findAccountByAddress(this.#d.accounts, address.value),
        )
      : null;
    const hash = account?.passwordHash ?? (await this.#dummy());
    const matches = await this.#d.hasher.verify(hash, credentials.password, lane);
    return account !== null && account.passwordHash !== null && matches ? account : null;
  }

  /** The claim a login makes on the password-guessing counts (sign-in-throttle/rules.ts). */
  #claimFor(input: Credentials & LoginContext): PasswordCheckClaim {
    const address = normalizeAddress(input.address);
    // An address that cannot be normalized is still a key: guessing at it is counted like any other.
    const addressKey = address.ok ? address.value.key : `unnormalized:${input.address}`;
    return {
      addressKey,
      legacyKey: address.ok ? address.value.legacyKey : addressKey,
      sourceKey: input.source ?? 'unknown',
      ticketHash: input.signInTicket ? signInTicketHash(input.signInTicket) : null,
      at: this.#d.clock.now(),
      sourceLimit: this.#d.sourceFailureLimit ?? DEFAULT_SOURCE_FAILURES,
    };
  }

  /**
   * Judges the password under the guessing counts: claims a check (refused: throttled, nothing
   * hashed), hashes, and gives the claim back when the password was right or was never compared
   * (a fault or load shedding between claim and compare must not count against the address).
   */
  async #judgedCheck(input: Credentials & LoginContext): Promise<Result<AccountRecord | null, 'error.auth.throttled'>> {
    // Under a flood of sign-ins, one the hasher has no room for is refused before the account is
    // read: the refusal then costs no database work, and the database serves everyone else.
    const lane = input.source ?? 'unknown';
    this.#d.hasher.shedIfFull?.(lane);
    const store = this.#d.signIn;
    if (store === undefined) return ok(await this.#checkCredentials(input, lane));
    const claim = this.#claimFor(input);
    const admission = await guard('error.store.unavailable', 'counting a password check', () =>
      store.claimPasswordCheck(claim),
    );
    if (!admission.admitted) {
      // `retry_after_s` is for the Retry-After header; the HTTP layer moves it there.
      return refuse(
        'error.auth.throttled',
        admission.heldBy === 'address'
          ? 'Too many wrong passwords for this address; try again later.'
          : 'Too many failed sign-ins from this client address; try again later.',
        {
          retry_after_s: admission.retryAfterS,
        },
      );
    }
    let account: AccountRecord | null;
    try {
      account = await this.#checkCredentials(input, lane);
    } catch (fault) {
      await this.#refund(store, claim, admission.by);
      throw fault;
    }
    if (account !== null) await this.#refund(store, claim, admission.by);
    return ok(account);
  }

  /**
   * The password of a signed-in account, checked for reauthenticate or a password change, under a
   * count of the session's own: a stolen access token must not be a way around the guessing bound
   * (a right guess there buys a fresh authentication, then every action a stale token is refused),
   * yet strangers guessing at the address must not stop the owner's own session from reconfirming
   * or changing the password. So the session is both the count's address and its source: ten wrong
   * passwords an hour per session, with the same backoff as sign-in; a stolen session cannot be
   * multiplied without signing in, which needs the password.
   */
  async #sessionPasswordCheck(
    principal: Principal,
    account: AccountRecord,
    password: string,
    lane: string,
  ): Promise<Result<boolean, 'error.auth.throttled'>> {
    const hash = account.passwordHash;
    if (hash === null) return ok(false);
    const verify = async () => couldBePassword(password) && (await this.#d.hasher.verify(hash, password, lane));
    const store = this.#d.signIn;
    if (store === undefined) return ok(await verify());
    const key = sessionCountKey(principal.sessionId);
    const claim: PasswordCheckClaim = {
      addressKey: key,
      legacyKey: key,
      sourceKey: key,
      ticketHash: null,
      at: this.#d.clock.now(),
      sourceLimit: this.#d.sourceFailureLimit ?? DEFAULT_SOURCE_FAILURES,
    };
    const admission = await guard('error.store.unavailable', 'counting a password check', () =>
      store.claimPasswordCheck(claim),
    );
    if (!admission.admitted) {
      return refuse('error.auth.throttled', 'Too many wrong passwords from this session; try again later.', {
        retry_after_s: admission.retryAfterS,
      });
    }
    let matches: boolean;
    try {
      matches = await verify();
    } catch (fault) {
      await this.#refund(store, claim, admission.by);
      throw fault;
    }
    if (matches) await this.#refund(store, claim, admission.by);
    return ok(matches);
  }

  async #refund(store: SignInThrottleStore, claim: PasswordCheckClaim, by: CheckedBy): Promise<void> {
    await guard('error.store.unavailable', 'refunding a password check', () => store.refundPasswordCheck(claim, by));
  }

  async login(
    input: Credentials & LoginContext,
  ): Promise<
    Result<
      LoginOutcome,
      'error.request.invalid' | 'error.auth.invalid_credentials' | 'error.auth.account_locked' | 'error.auth.throttled'
    >
  > {
    // An address no account can hold (an invisible or control character in it) is bad input, not
    // a wrong credential; it says nothing about any account.
    if (holdsInvisible(input.address))
      return refuse('error.request.invalid', 'The address holds an invisible or control character.');
    const checked = await this.#judgedCheck(input);
    if (!checked.ok) return checked;
    const account = checked.value;
    if (account === null) return refuse('error.auth.invalid_credentials', INVALID);
    if (account.lockedAt !== null) return refuse('error.auth.account_locked', 'This account is locked.');
    const gate = this.#d.loginGate ? await this.#d.loginGate.afterPassword(account) : ({ kind: 'open' } as const);
    if (gate.kind === 'challenge') return ok(gate);
    if (gate.kind === 'throttled') {
      return refuse('error.auth.throttled', 'Too many wrong codes for this account; try again later.', {
        retry_after_s: gate.retryAfterS,
      });
    }
    const pair = await this.#d.sessions.open(account, { cohortHash: input.cohortHash });
    // The password changed (or the account was locked or revoked) while this one was checked.
    if (pair === null) return refuse('error.auth.invalid_credentials', INVALID);
    return ok({ kind: 'session', pair });
  }

  /** Confirms the caller still knows the password. No second factor is asked for. */
  async reauthenticate(
    principal: Principal,
    password: string,
    /** The client address's key: the hasher's lane. */
    source = 'unknown',
  ): Promise<
    Result<
      { reauthenticatedAt: number },
      | 'error.auth.invalid_credentials'
      | 'error.auth.session_invalid'
      | 'error.auth.no_local_password'
      | 'error.sponsored.no_identity'
      | 'error.auth.throttled'
    >
  > {
    // A sponsored account has no password of its own: acting as one, nothing is read or hashed.
    const own = decideOwnIdentity(principal);
    if (!own.ok) return own;
    this.#d.hasher.shedIfFull?.(source);
    const account = await this.#account(principal);
    if (!account.ok) return account;
    if (account.value.passwordHash === null) return refuse('error.auth.no_local_password', NO_LOCAL_PASSWORD);
    const matches = await this.#sessionPasswordCheck(principal, account.value, password, source);
    if (!matches.ok) return matches;
    if (!matches.value) return refuse('error.auth.invalid_credentials', 'The password is wrong.');
    const at = this.#d.clock.now();
    const recorded = await this.#d.sessions.recordAuthentication(principal, at);
    if (!recorded.ok) return recorded;
    return ok({ reauthenticatedAt: at });
  }

  /**
   * Changes the password, closes every session of the account and re-opens the caller's under its
   * own id with a new session token; access tokens minted before the change stop working.
   */
  async changePassword(
    principal: Principal,
    input: {
      currentPassword: string;
      newPassword: string /** The client address's key: the hasher's lane. */;
      source?: string;
    },
  ): Promise<
    Result<
      TokenPair,
      | 'error.auth.weak_password'
      | 'error.request.invalid'
      | 'error.auth.invalid_credentials'
      | 'error.auth.account_locked'
      | 'error.auth.session_invalid'
      | 'error.auth.no_local_password'
      | 'error.sponsored.no_identity'
      | 'error.auth.throttled'
    >
  > {
    const own = decideOwnIdentity(principal);
    if (!own.ok) return own;
    const strength = checkPassword(input.newPassword);
    if (!strength.ok) return strength;
    const lane = input.source ?? 'unknown';
    this.#d.hasher.shedIfFull?.(lane);
    const account = await this.#account(principal);
    if (!account.ok) return account;
    if (account.value.passwordHash === null) return refuse('error.auth.no_local_password', NO_LOCAL_PASSWORD);
    // The answer is an access-token issuance: a session past an expiry gets none, and nothing changes.
    const issuable = await this.#d.sessions.issuable(principal.sessionId);
    if (!issuable.ok) return issuable;
    const matches = await this.#sessionPasswordCheck(principal, account.value, input.currentPassword, lane);
    if (!matches.ok) return matches;
    if (!matches.value) return refuse('error.auth.invalid_credentials', 'The current password is wrong.');
    if (account.value.lockedAt !== null) return refuse('error.auth.account_locked', 'This account is locked.');
    const passwordHash = await this.#d.hasher.hash(input.newPassword, lane);
    const { token, tokenHash } = newSessionToken(this.#d.random);
    const at = this.#d.clock.now();
    const changed = await guard('error.store.unavailable', 'changing the password', () =>
      this.#d.accounts.changePassword({
        accountId: principal.accountId,
        passwordHash,
        sessionId: principal.sessionId,
        tokenHash,
        at,
        credentialsChangedAt: account.value.credentialsChangedAt ?? null,
      }),
    );
    if (!changed) return refuse('error.auth.session_invalid', 'The session is no longer open.');
    // The new stamp ends the account's tickets; voiding also ends one issued in the same millisecond.
    await this.#d.sessions.voidTickets(principal.accountId);
    const access = await this.#d.sessions.issueFor(principal.accountId, principal.sessionId, tokenHash);
    if (!access.ok) return access;
    return ok({
      sessionId: principal.sessionId,
      sessionToken: token,
      accessToken: access.value.accessToken,
      expiresIn: access.value.expiresIn,
    });
  }

  /** The caller's profile: from the account read with the session when there is one, else read now. */
  async profile(principal: Principal): Promise<Result<Profile, 'error.auth.session_invalid'>> {
    if (principal.account !== undefined) return ok(profileOf(principal.account));
    const account = await this.#account(principal);
    return account.ok ? ok(profileOf(account.value)) : account;
  }

  /** `undefined` leaves the name alone; null or an empty string clears it. */
  async updateProfile(
    principal: Principal,
    patch: { displayName?: string | null },
  ): Promise<
    Result<Profile, 'error.profile.invalid_display_name' | 'error.auth.session_invalid' | 'error.sponsored.no_identity'>
  > {
    if (patch.displayName === undefined) return this.profile(principal);
    const own = decideOwnIdentity(principal);
    if (!own.ok) return own;
    const name = normalizeDisplayName(patch.displayName);
    if (!name.ok) return name;
    const updated = await guard('error.store.unavailable', 'updating the profile', () =>
      this.#d.accounts.setDisplayName(principal.accountId, name.value),
    );
    return updated ? ok(profileOf(updated)) : refuse('error.auth.session_invalid', 'The account no longer exists.');
  }

  async #account(principal: Principal): Promise<Result<AccountRecord, 'error.auth.session_invalid'>> {
    const account = await guard('error.store.unavailable', 'reading the account', () =>
      this.#d.accounts.findAccountById(principal.accountId),
    );
    return account
      ? ok(account)
      : (refuse(
          'error.auth.session_invalid',
          'The account no longer exists.',
        ) as Refusal<'error.auth.session_invalid'>);
  }
}
