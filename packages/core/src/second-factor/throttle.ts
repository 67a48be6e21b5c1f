/**
 * The per-account bound on second-factor guessing (spec §5.6). The challenge's
 * own limit (five code checks) bounds one challenge; this bounds the account across challenges,
 * so knowing the password no longer buys an unlimited supply of guesses.
 *
 * The rule, computed from time alone (no job resets anything):
 * - only wrong codes count (a wrong password never reaches this rule);
 * - look at the wrong codes in the hour ending at the latest one: with fewer than ten, nothing is
 *   held back;
 * - with ten, the account is held for one minute after the latest; each further wrong code in that
 *   hour doubles the delay, up to one hour.
 * While held, a correct password yields no new challenge and no code is checked.
 *
 * Count, then compare: every code check, on every route that checks
 * one (sign-in, verify-enrollment, disable), first claims its place with {@link claimCodeCheck}
 * inside the store's transaction, which counts it as wrong before the code is looked at; only an
 * admitted check is compared, and a right code gives its place back ({@link refundCodeCheck}).
 * Reading the hold, comparing, then recording let every guess sent together pass the same "not
 * held" reading: 250 challenges with 5 concurrent guesses each had 79 wrong codes checked, not 10.
 */

export const THROTTLE_FREE_WRONG_CODES = 10;
export const THROTTLE_WINDOW_MS = 60 * 60_000;
export const THROTTLE_FIRST_DELAY_MS = 60_000;
export const THROTTLE_MAX_DELAY_MS = 60 * 60_000;
/**
 * How many wrong-code times are worth keeping: the delay reaches its cap at ten plus six (2^6
 * minutes is past an hour), so older ones can never change a decision.
 */
export const THROTTLE_KEPT =
  THROTTLE_FREE_WRONG_CODES + Math.ceil(Math.log2(THROTTLE_MAX_DELAY_MS / THROTTLE_FIRST_DELAY_MS));

/** What the store keeps per account: the times of its most recent wrong codes, oldest first. */
export interface TotpThrottleState {
  readonly wrongCodesAt: readonly number[];
}

/**
 * The state after a wrong code at `now`: times older than the window are dropped (they can no
 * longer count) and at most {@link THROTTLE_KEPT} are kept. Stores apply this inside their own
 * transaction, so concurrent wrong codes on several processes all count.
 */
export function recordWrongCode(state: TotpThrottleState | null, now: number): TotpThrottleState {
  const recent = (state?.wrongCodesAt ?? []).filter((t) => t > now - THROTTLE_WINDOW_MS);
  recent.push(now);
  recent.sort((a, b) => a - b);
  return { wrongCodesAt: recent.slice(-THROTTLE_KEPT) };
}

/** Until when the account is held (epoch ms), or null when it is not held at all. */
export function heldUntil(state: TotpThrottleState | null): number | null {
  const times = state?.wrongCodesAt ?? [];
  const latest = times.length > 0 ? Math.max(...times) : null;
  if (latest === null) return null;
  const inWindow = times.filter((t) => t > latest - THROTTLE_WINDOW_MS).length;
  if (inWindow < THROTTLE_FREE_WRONG_CODES) return null;
  const doublings = inWindow - THROTTLE_FREE_WRONG_CODES;
  return latest + Math.min(THROTTLE_FIRST_DELAY_MS * 2 ** doublings, THROTTLE_MAX_DELAY_MS);
}

/** May the account start (or continue) a second-factor sign-in at `now`? If not, for how long not. */
export function throttleDecision(
  state: TotpThrottleState | null,
  now: number,
): { held: false } | { held: true; retryAfterS: number } {
  const until = heldUntil(state);
  if (until === null || now >= until) return { held: false };
  return { held: true, retryAfterS: Math.ceil((until - now) / 1000) };
}

/** Whether one code check may go ahead: as the store reports the claim it made atomically. */
export type CodeCheckAdmission =
  | { readonly admitted: true }
  | { readonly admitted: false; readonly retryAfterS: number };

/**
 * The claim of one code check at `now`, decided on the stored state: held, it is refused and
 * nothing is written (`next` null); otherwise it is admitted and counted as a wrong code already
 * (`next`), so concurrent claims, each applied to the state the previous one left, can admit at
 * most the bound. Stores apply this inside one transaction (a row lock on PostgreSQL).
 */
export function claimCodeCheck(
  state: TotpThrottleState | null,
  now: number,
): { admission: CodeCheckAdmission; next: TotpThrottleState | null } {
  const decision = throttleDecision(state, now);
  if (decision.held) return { admission: { admitted: false, retryAfterS: decision.retryAfterS }, next: null };
  return { admission: { admitted: true }, next: recordWrongCode(state, now) };
}

/**
 * A check claimed at `at` turned out to be a right code: its place is given back (one entry at
 * `at` removed), since only wrong codes count. Nothing to give back leaves the state as it was.
 */
export function refundCodeCheck(state: TotpThrottleState | null, at: number): TotpThrottleState {
  const times = [...(state?.wrongCodesAt ?? [])];
  const i = times.lastIndexOf(at);
  if (i >= 0) times.splice(i, 1);
  return { wrongCodesAt: times };
}
