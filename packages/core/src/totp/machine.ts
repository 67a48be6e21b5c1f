import { Secret, TOTP } from 'otpauth';
import { constantTimeEqual, utf8 } from '../encoding/bytes.js';
import { ok, refuse, type Result } from '../errors.js';
import { holds, type RowFilter } from '../filters/filter.js';
import type { TotpChallengeRecord } from '../ports/totp-store.js';

/** RFC 6238 parameters fixed by spec §5.2: SHA-1, six digits, a 30-second step. */
export const TOTP_ALGORITHM = 'SHA1';
export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_S = 30;
/** One step of drift either side: a code lives for about ninety seconds. */
export const TOTP_DRIFT_STEPS = 1;
/** 160-bit secrets, the RFC 4226 recommendation for HMAC-SHA-1. */
export const TOTP_SECRET_BYTES = 20;
export const CHALLENGE_TTL_MS = 5 * 60_000;
export const CHALLENGE_MAX_ATTEMPTS = 5;

/** A code as typed: exactly six ASCII digits. */
export const TOTP_CODE_PATTERN = /^[0-9]{6}$/;
const CODE = TOTP_CODE_PATTERN;

/** Exactly six ASCII digits. Anything else is malformed input, not a wrong guess. */
export function isWellFormedCode(code: string): boolean {
  return CODE.test(code);
}

/** The RFC 6238 time step T = floor(now / 30 s), T0 = 0. */
export function stepAt(now: number): number {
  return TOTP.counter({ period: TOTP_PERIOD_S, timestamp: now });
}

/** The code for one step. otpauth gets an explicit timestamp: it never reads the wall clock here. */
export function codeForStep(secret: Uint8Array, step: number): string {
  return TOTP.generate({
    secret: new Secret({ buffer: secret.slice().buffer }),
    algorithm: TOTP_ALGORITHM,
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_S,
    timestamp: step * TOTP_PERIOD_S * 1000,
  });
}

/**
 * The one rule for which step a code may use (the replay ledger's compare-and-set): within one step
 * of `now` and strictly above the highest step already used (none used yet: any step near now).
 * The code check here and the stores' conditional writes (advance, remove) both call it, so the
 * stores hold no SQL copy of it.
 */
export function acceptsStep(highestUsedStep: number | null, step: number, now: number): boolean {
  if (!Number.isSafeInteger(step) || Math.abs(step - stepAt(now)) > TOTP_DRIFT_STEPS) return false;
  return highestUsedStep === null || step > highestUsedStep;
}

/**
 * What a store asks before advancing or removing a factor with `step`: the factor is confirmed and
 * {@link acceptsStep} holds for its ledger.
 */
export function usableStep(
  enrollment: { readonly state: 'pending' | 'confirmed'; readonly highestUsedStep: number | null } | null,
  step: number,
  now: number,
): boolean {
  return enrollment?.state === 'confirmed' && acceptsStep(enrollment.highestUsedStep, step, now);
}

/**
 * Whether the event, in this state, compares a code at all (so it must first claim a place under
 * the per-account bound). A refusal decided by the phase alone compares nothing.
 */
export function comparesCode(state: TotpState, event: TotpEvent): boolean {
  if (event.kind === 'verify_enrollment') return state.phase === 'pending';
  if (event.kind === 'disable' || event.kind === 'sign_in') return state.phase === 'confirmed';
  return false;
}

/**
 * The step a code proves, if any: one {@link acceptsStep} accepts. When a code happens to match two candidate steps, the lowest unused one counts,
 * so a legitimate code is never refused for a collision with a used step.
 */
export function matchCode(
  secret: Uint8Array,
  code: string,
  now: number,
  highestUsedStep: number | null,
): Result<number, 'error.auth.invalid_code'> {
  if (isWellFormedCode(code)) {
    const current = stepAt(now);
    for (let step = current - TOTP_DRIFT_STEPS; step <= current + TOTP_DRIFT_STEPS; step++) {
      if (!acceptsStep(highestUsedStep, step, now)) continue;
      if (constantTimeEqual(utf8(codeForStep(secret, step)), utf8(code))) return ok(step);
    }
  }
  return refuse('error.auth.invalid_code', 'The code is wrong, expired or already used.');
}

/** Enrollment (spec §5.1). "None" has no secret; the replay ledger exists once confirmed. */
export type TotpState =
  | { readonly phase: 'none' }
  | { readonly phase: 'pending'; readonly secret: Uint8Array }
  | { readonly phase: 'confirmed'; readonly secret: Uint8Array; readonly highestUsedStep: number };

export type TotpEvent =
  /** Issue a fresh secret (the service draws it from the Random port). */
  | { readonly kind: 'enroll'; readonly secret: Uint8Array }
  | { readonly kind: 'verify_enrollment'; readonly code: string }
  | { readonly kind: 'disable'; readonly code: string }
  /** The code check of a sign-in challenge. */
  | { readonly kind: 'sign_in'; readonly code: string };

export interface TotpTransition {
  readonly state: TotpState;
  /** The step the event's code consumed; the store must advance its ledger to it atomically. */
  readonly usedStep: number | null;
}

export type TotpRefusal =
  | 'error.auth.totp_already_enrolled'
  | 'error.auth.totp_not_enrolled'
  | 'error.auth.invalid_code';

const NOT_ENROLLED = 'No confirmed second factor.';

/**
 * None -> Pending -> Confirmed -> None. Pure and total: every (state, event) pair yields either
 * the next state with the step it used, or a refusal that leaves the state as it was.
 */
export function transition(state: TotpState, event: TotpEvent, now: number): Result<TotpTransition, TotpRefusal> {
  switch (event.kind) {
    case 'enroll':
      if (state.phase === 'confirmed')
        return refuse('error.auth.totp_already_enrolled', 'A second factor is already confirmed; disable it first.');
      return ok({ state: { phase: 'pending', secret: event.secret }, usedStep: null });
    case 'verify_enrollment': {
      if (state.phase === 'none')
        return refuse('error.auth.totp_not_enrolled', 'No enrollment is pending; enroll first.');
      if (state.phase === 'confirmed')
        return refuse('error.auth.totp_already_enrolled', 'The second factor is already confirmed.');
      const step = matchCode(state.secret, event.code, now, null);
      if (!step.ok) return step;
      return ok({
        state: { phase: 'confirmed', secret: state.secret, highestUsedStep: step.value },
        usedStep: step.value,
      });
    }
    case 'disable': {
      if (state.phase !== 'confirmed') return refuse('error.auth.totp_not_enrolled', NOT_ENROLLED);
      const step = matchCode(state.secret, event.code, now, state.highestUsedStep);
      if (!step.ok) return step;
      return ok({ state: { phase: 'none' }, usedStep: step.value });
    }
    case 'sign_in': {
      if (state.phase !== 'confirmed') return refuse('error.auth.totp_not_enrolled', NOT_ENROLLED);
      const step = matchCode(state.secret, event.code, now, state.highestUsedStep);
      if (!step.ok) return step;
      return ok({ state: { ...state, highestUsedStep: step.value }, usedStep: step.value });
    }
  }
}

/** Does a correct password on this account need a second factor before a session opens? */
export function requiresChallenge(state: { readonly phase: TotpState['phase'] }): boolean {
  return state.phase === 'confirmed';
}

/**
 * May a code be checked against this challenge (its attempt already counted)? Unknown, used and
 * expired look the same; the sixth attempt and later are exhausted whatever the code.
 */
/** A challenge stores its expiry only; it was opened one lifetime before it. */
export function challengeOpenedAt(challenge: Pick<TotpChallengeRecord, 'expiresAt'>): number {
  return challenge.expiresAt - CHALLENGE_TTL_MS;
}

/**
 * A challenge lapses at its expiry (parameter `now`): judged invalid from then on, and purged by
 * the stores when the next challenge is opened.
 */
export const TOTP_CHALLENGE_LAPSED: RowFilter<'expiresAt'> = [{ op: '<=', field: 'expiresAt', param: 'now' }];

export function judgeChallenge(
  challenge: TotpChallengeRecord | null,
  now: number,
): Result<TotpChallengeRecord, 'error.auth.challenge_invalid' | 'error.auth.challenge_exhausted'> {
  if (challenge === null || holds(TOTP_CHALLENGE_LAPSED, challenge, { now })) {
    return refuse('error.auth.challenge_invalid', 'The challenge is unknown, expired or already used.');
  }
  if (challenge.attempts > CHALLENGE_MAX_ATTEMPTS) {
    return refuse('error.auth.challenge_exhausted', 'Too many attempts for this challenge; sign in again.');
  }
  return ok(challenge);
}

/** Attempts a challenge has left once `attempts` of them are counted. */
export function attemptsLeft(attempts: number): number {
  return Math.max(0, CHALLENGE_MAX_ATTEMPTS - attempts);
}
