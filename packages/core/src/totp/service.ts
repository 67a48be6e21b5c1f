import { Secret, TOTP } from 'otpauth';
import type { LoginGate } from '../account/service.js';
import { fromBase64url, sha256Hex, toBase64url } from '../encoding/bytes.js';
import { CoreError, guard, ok, refuse, type Result } from '../errors.js';
import type { AccountRecord, AccountStore } from '../ports/account-store.js';
import type { Clock } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import type { Random } from '../ports/random.js';
import type { TotpChallengeRecord, TotpEnrollmentRecord, TotpStore } from '../ports/totp-store.js';
import type { TotpThrottleStore } from '../ports/totp-throttle.js';
import { throttleDecision, type CodeCheckAdmission } from '../second-factor/throttle.js';
import { outlivesCredentialChange } from '../account/credential-change.js';
import type { Principal, SessionService, TokenPair } from '../session/service.js';
import {
  attemptsLeft,
  CHALLENGE_TTL_MS,
  challengeOpenedAt,
  comparesCode,
  isWellFormedCode,
  judgeChallenge,
  requiresChallenge,
  TOTP_ALGORITHM,
  TOTP_DIGITS,
  TOTP_PERIOD_S,
  TOTP_SECRET_BYTES,
  transition,
  type TotpState,
} from './machine.js';
import { TotpSecretBox } from './secret-box.js';
import { decideOwnIdentity } from '../sponsorship/rules.js';

export interface TotpServiceDeps {
  readonly store: TotpStore;
  readonly accounts: AccountStore;
  readonly sessions: SessionService;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  /** The 32-byte server key that seals secrets at rest. */
  readonly secretKey: Uint8Array;
  /** The issuer an authenticator app shows beside the account (otpauth `issuer`); holds no colon. */
  readonly issuer: string;
  /**
   * The per-account wrong-code record. The server always gives one; without it only the
   * per-challenge limit applies (unit tests of other rules).
   */
  readonly throttle?: TotpThrottleStore;
}

/** What enroll hands back, once: the secret is never readable again. */
export interface TotpEnrollment {
  /** RFC 4648 base32, no padding. */
  readonly secret: string;
  /** `otpauth://totp/<issuer>:<address>?secret=…&algorithm=SHA1&digits=6&period=30`. */
  readonly uri: string;
}

const CHALLENGE_BYTES = 32;
const UNAVAILABLE = 'error.auth.unavailable';
const MALFORMED_CODE = 'The code must be exactly six digits.';
const CHALLENGE_INVALID = 'The challenge is unknown, expired or already used.';
const THROTTLED = 'Too many wrong codes for this account; try again later.';
const WRONG_CODE = 'The code is wrong, expired or already used.';

/**
 * The TOTP second factor (spec §5.1 to §5.5) over a {@link TotpStore}. Every method reads the
 * clock once, hands the decision to the pure machine and applies it with one conditional store
 * call, so a concurrent request can only make it refuse, never accept twice. Any store fault
 * throws `error.auth.unavailable`: sign-in and code checks fail closed.
 *
 * It is also the account service's {@link LoginGate}: a correct password on an account with a
 * confirmed factor yields a challenge instead of a session.
 */
export class TotpService implements LoginGate {
  readonly #d: TotpServiceDeps;
  readonly #box: TotpSecretBox;

  constructor(deps: TotpServiceDeps) {
    // The Key URI Format splits the label at the first colon: an issuer holding one (a host with
    // its port) would be read as a different issuer than the parameter, or refused.
    if (deps.issuer.includes(':')) throw new CoreError('error.internal', 'The TOTP issuer must not contain a colon.');
    this.#d = deps;
    this.#box = new TotpSecretBox({ key: deps.secretKey, random: deps.random });
  }

  /** Issues a fresh secret: None or Pending -> Pending. Over a confirmed factor it is refused. */
  async enroll(
    principal: Principal,
  ): Promise<
    Result<
      TotpEnrollment,
      | 'error.auth.totp_already_enrolled'
      | 'error.auth.session_invalid'
      | 'error.auth.no_local_password'
      | 'error.auth.reauthentication_required'
      | 'error.sponsored.no_identity'
    >
  > {
    // A sponsored account has no sign-in of its own to guard: acting as one, nothing is read.
    const own = decideOwnIdentity(principal);
    if (!own.ok) return own;
    const recent = await this.#d.sessions.requireRecentAuthentication(principal, 'totp_enroll');
    if (!recent.ok) return recent;
    const now = this.#d.clock.now();
    const { state } = await this.#load(principal.accountId);
    const secret = this.#d.random.bytes(TOTP_SECRET_BYTES);
    const next = transition(state, { kind: 'enroll', secret }, now);
    if (!next.ok) return refuse('error.auth.totp_already_enrolled', next.detail);
    const account = await guard(UNAVAILABLE, 'reading the account', () =>
      this.#d.accounts.findAccountById(principal.accountId),
    );
    if (account === null) return refuse('error.auth.session_invalid', 'The account no longer exists.');
    // A local second factor guards a local password; an OpenID-only account's provider owns its factors.
    if (account.passwordHash === null)
      return refuse('error.auth.no_local_password', 'This account signs in through its OpenID provider only.');
    const sealedSecret = await this.#box.seal(secret, principal.accountId);
    const saved = await guard(UNAVAILABLE, 'saving the enrollment', () =>
      this.#d.store.savePendingTotp({ accountId: principal.accountId, sealedSecret, at: now }),
    );
    // Confirmed by a concurrent request between our read and our write.
    if (!saved)
      return refuse('error.auth.totp_already_enrolled', 'A second factor is already confirmed; disable it first.');
    const totp = new TOTP({
      issuer: this.#d.issuer,
      label: account.address ?? account.id,
      secret: new Secret({ buffer: secret.slice().buffer }),
      algorithm: TOTP_ALGORITHM,
      digits: TOTP_DIGITS,
      period: TOTP_PERIOD_S,
    });
    return ok({ secret: totp.secret.base32, uri: totp.toString() });
  }

  /** Pending -> Confirmed with a valid code; the code's step becomes the first used step. */
  async verifyEnrollment(
    principal: Principal,
    code: string,
  ): Promise<
    Result<
      void,
      | 'error.request.invalid'
      | 'error.auth.invalid_code'
      | 'error.auth.totp_not_enrolled'
      | 'error.auth.totp_already_enrolled'
      | 'error.auth.reauthentication_required'
      | 'error.auth.throttled'
      | 'error.sponsored.no_identity'
    >
  > {
    const own = decideOwnIdentity(principal);
    if (!own.ok) return own;
    if (!isWellFormedCode(code)) return refuse('error.request.invalid', MALFORMED_CODE);
    // Before any code is checked: a stale session may not even guess.
    const recent = await this.#d.sessions.requireRecentAuthentication(principal, 'totp_verify_enrollment');
    if (!recent.ok) return recent;
    const now = this.#d.clock.now();
    const { state, record } = await this.#load(principal.accountId);
    const event = { kind: 'verify_enrollment', code } as const;
    if (comparesCode(state, event)) {
      const held = await this.#claim(principal.accountId, now);
      if (held !== null) return held;
    }
    const next = transition(state, event, now);
    if (!next.ok) return next;
    // The machine only confirms a pending state, which only exists with a row behind it.
    const sealedSecret = record?.sealedSecret ?? '';
    const confirmed = await guard(UNAVAILABLE, 'confirming the enrollment', () =>
      this.#d.store.confirmTotp({ accountId: principal.accountId, sealedSecret, step: next.value.usedStep!, at: now }),
    );
    // Re-enrolled or confirmed concurrently: this code no longer proves anything (and stays counted).
    if (!confirmed) return refuse('error.auth.invalid_code', WRONG_CODE);
    await this.#refund(principal.accountId, now);
    return ok(undefined);
  }

  /** Confirmed -> None, with a live code (one not used before). */
  async disable(
    principal: Principal,
    code: string,
  ): Promise<
    Result<
      void,
      | 'error.request.invalid'
      | 'error.auth.invalid_code'
      | 'error.auth.totp_not_enrolled'
      | 'error.auth.reauthentication_required'
      | 'error.auth.throttled'
      | 'error.sponsored.no_identity'
    >
  > {
    const own = decideOwnIdentity(principal);
    if (!own.ok) return own;
    if (!isWellFormedCode(code)) return refuse('error.request.invalid', MALFORMED_CODE);
    const recent = await this.#d.sessions.requireRecentAuthentication(principal, 'totp_disable');
    if (!recent.ok) return recent;
    const now = this.#d.clock.now();
    const { state } = await this.#load(principal.accountId);
    const event = { kind: 'disable', code } as const;
    if (comparesCode(state, event)) {
      const held = await this.#claim(principal.accountId, now);
      if (held !== null) return held;
    }
    const next = transition(state, event, now);
    if (!next.ok)
      return refuse(next.code === 'error.auth.invalid_code' ? next.code : 'error.auth.totp_not_enrolled', next.detail);
    const removed = await guard(UNAVAILABLE, 'removing the factor', () =>
      this.#d.store.removeTotp(principal.accountId, next.value.usedStep!, now),
    );
    if (!removed) return refuse('error.auth.invalid_code', WRONG_CODE);
    await this.#refund(principal.accountId, now);
    return ok(undefined);
  }

  /** The login gate: a confirmed factor turns a correct password into a challenge, opening nothing. */
  async afterPassword(
    account: AccountRecord,
  ): Promise<
    | { kind: 'open' }
    | { kind: 'challenge'; challenge: string; expiresIn: number; accountId: string }
    | { kind: 'throttled'; retryAfterS: number }
  > {
    const now = this.#d.clock.now();
    const record = await guard(UNAVAILABLE, 'reading the second factor', () =>
      this.#d.store.findTotpEnrollment(account.id),
    );
    if (!requiresChallenge({ phase: record?.state ?? 'none' })) return { kind: 'open' };
    const held = await this.#held(account.id, now);
    if (held !== null) return { kind: 'throttled', retryAfterS: held };
    const bytes = this.#d.random.bytes(CHALLENGE_BYTES);
    await guard(UNAVAILABLE, 'creating the challenge', () =>
      this.#d.store.createTotpChallenge({
        idHash: sha256Hex(bytes),
        accountId: account.id,
        expiresAt: now + CHALLENGE_TTL_MS,
        attempts: 0,
      }),
    );
    // Housekeeping only: a failure here costs a few stale rows, never the sign-in.
    await this.#d.store
      .purgeTotpChallenges(now)
      .catch((cause: unknown) =>
        this.#d.logger.warn('totp.purge_failed', { error: String((cause as Error)?.message ?? cause) }),
      );
    return {
      kind: 'challenge',
      challenge: toBase64url(bytes),
      expiresIn: CHALLENGE_TTL_MS / 1000,
      accountId: account.id,
    };
  }

  /** Seconds the account is still held by the wrong-code throttle at `now`, or null when it is not. */
  async #held(accountId: string, now: number): Promise<number | null> {
    const throttle = this.#d.throttle;
    if (throttle === undefined) return null;
    const state = await guard(UNAVAILABLE, 'reading the wrong-code record', () => throttle.findTotpThrottle(accountId));
    const decision = throttleDecision(state, now);
    return decision.held ? decision.retryAfterS : null;
  }

  /**
   * Claims a place for one code check under the per-account bound, before the code is compared
   * (core's `claimCodeCheck`, applied atomically by the store). Null when admitted; the 429 refusal
   * when the account is held. Without a throttle store (unit tests of other rules) every check is
   * admitted.
   */
  async #claim(accountId: string, now: number): Promise<Result<never, 'error.auth.throttled'> | null> {
    const throttle = this.#d.throttle;
    if (throttle === undefined) return null;
    const admission: CodeCheckAdmission = await guard(UNAVAILABLE, 'counting the code check', () =>
      throttle.claimTotpCodeCheck(accountId, now),
    );
    return admission.admitted
      ? null
      : refuse('error.auth.throttled', THROTTLED, { retry_after_s: admission.retryAfterS });
  }

  /**
   * A right code gives back the place it claimed. The factor's change is already committed, so a
   * store fault here costs one counted check, never the answer.
   */
  async #refund(accountId: string, at: number): Promise<void> {
    await this.#d.throttle
      ?.refundTotpCodeCheck(accountId, at)
      .catch((cause: unknown) =>
        this.#d.logger.warn('totp.refund_failed', { error: String((cause as Error)?.message ?? cause) }),
      );
  }

  /**
   * Completes a challenged sign-in: counts the attempt on the challenge first (so the sixth is
   * refused even with the right code), checks the code, advances the replay ledger, burns the
   * challenge, and only then opens the session and records the cohort.
   */
  async verifyLogin(input: {
    challenge: string;
    code: string;
    cohortHash: string | null;
  }): Promise<
    Result<
      TokenPair,
      | 'error.request.invalid'
      | 'error.auth.invalid_code'
      | 'error.auth.challenge_invalid'
      | 'error.auth.challenge_exhausted'
      | 'error.auth.account_locked'
      | 'error.auth.throttled'
    >
  > {
    if (!isWellFormedCode(input.code)) return refuse('error.request.invalid', MALFORMED_CODE);
    const bytes = fromBase64url(input.challenge);
    if (bytes === null || bytes.length !== CHALLENGE_BYTES)
      return refuse('error.auth.challenge_invalid', CHALLENGE_INVALID);
    const idHash = sha256Hex(bytes);
    const now = this.#d.clock.now();
    const counted = await guard(UNAVAILABLE, 'counting the attempt', () =>
      this.#d.store.countTotpChallengeAttempt(idHash),
    );
    const challenge = judgeChallenge(counted, now);
    if (!challenge.ok) return challenge;
    const { accountId } = challenge.value;
    // A password change, revoke-all, recovery or lock since the password step ended this challenge.
    if (!(await this.#outlivesCredentialChange(challenge.value))) {
      await guard(UNAVAILABLE, 'consuming the challenge', () => this.#d.store.consumeTotpChallenge(idHash));
      return refuse('error.auth.challenge_invalid', CHALLENGE_INVALID);
    }
    const { state } = await this.#load(accountId);
    const event = { kind: 'sign_in', code: input.code } as const;
    if (!comparesCode(state, event)) {
      // The factor was disabled after the password step: this challenge can never succeed.
      await guard(UNAVAILABLE, 'consuming the challenge', () => this.#d.store.consumeTotpChallenge(idHash));
      return refuse('error.auth.challenge_invalid', CHALLENGE_INVALID);
    }
    // Counted before it is compared; a held account has no code checked at all, not even on a
    // challenge opened before it was held.
    const held = await this.#claim(accountId, now);
    if (held !== null) return held;
    const next = transition(state, event, now);
    if (!next.ok) return this.#wrongCode(challenge.value.attempts);
    const advanced = await guard(UNAVAILABLE, 'advancing the used step', () =>
      this.#d.store.advanceTotpStep(accountId, next.value.usedStep!, now),
    );
    if (!advanced) return this.#wrongCode(challenge.value.attempts);
    await this.#refund(accountId, now);
    const consumed = await guard(UNAVAILABLE, 'consuming the challenge', () =>
      this.#d.store.consumeTotpChallenge(idHash),
    );
    if (!consumed) return refuse('error.auth.challenge_invalid', CHALLENGE_INVALID);
    const account = await guard(UNAVAILABLE, 'reading the account', () => this.#d.accounts.findAccountById(accountId));
    if (account === null || !outlivesCredentialChange(challengeOpenedAt(challenge.value), account))
      return refuse('error.auth.challenge_invalid', CHALLENGE_INVALID);
    // An operator may lock the account between the password and the code.
    if (account.lockedAt !== null) return refuse('error.auth.account_locked', 'This account is locked.');
    const pair = await this.#d.sessions.open(account, { cohortHash: input.cohortHash });
    // A password change, revoke-all, recovery or lock committed since the check above ended it.
    if (pair === null) return refuse('error.auth.challenge_invalid', CHALLENGE_INVALID);
    return ok(pair);
  }

  /** Whether the account has a confirmed factor (for the profile or the client's settings). */
  async status(principal: Principal): Promise<TotpState['phase']> {
    const record = await guard(UNAVAILABLE, 'reading the second factor', () =>
      this.#d.store.findTotpEnrollment(principal.accountId),
    );
    return record?.state ?? 'none';
  }

  async #outlivesCredentialChange(challenge: TotpChallengeRecord): Promise<boolean> {
    const account = await guard(UNAVAILABLE, 'reading the account', () =>
      this.#d.accounts.findAccountById(challenge.accountId),
    );
    return outlivesCredentialChange(challengeOpenedAt(challenge), account);
  }

  #wrongCode(attempts: number): Result<never, 'error.auth.invalid_code'> {
    return refuse('error.auth.invalid_code', WRONG_CODE, {
      attempts_left: attemptsLeft(attempts),
    });
  }

  /** Reads and unseals the enrollment. Unreadable or undecryptable: fail closed. */
  async #load(accountId: string): Promise<{ state: TotpState; record: TotpEnrollmentRecord | null }> {
    const record = await guard(UNAVAILABLE, 'reading the second factor', () =>
      this.#d.store.findTotpEnrollment(accountId),
    );
    if (record === null) return { state: { phase: 'none' }, record };
    const secret = await this.#box.open(record.sealedSecret, accountId);
    if (secret === null) {
      throw new CoreError(
        UNAVAILABLE,
        'the stored TOTP secret does not open under the server key (was SVC_SECRET_KEY changed?)',
      );
    }
    const state: TotpState =
      record.state === 'pending'
        ? { phase: 'pending', secret }
        : { phase: 'confirmed', secret, highestUsedStep: record.highestUsedStep ?? Number.NEGATIVE_INFINITY };
    return { state, record };
  }
}
