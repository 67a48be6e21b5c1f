import { Secret } from 'otpauth';
import { codeForStep, stepAt, TOTP_PERIOD_S } from '@strongroom/core';

/**
 * The six-digit code an authenticator app would show for `secret` (base32, as enrollment returns
 * it) at `now`, `stepsAhead` periods of 30 s later. For tests, demos and the example: real apps
 * let the user read the code from their authenticator.
 *
 * The server accepts a code within one period of its clock whose period is later than the last
 * code it accepted, so a second sign-in right after enrollment uses `stepsAhead = 1`.
 */
export function authenticatorCode(secret: string, now: number = Date.now(), stepsAhead = 0): string {
  return codeForStep(Secret.fromBase32(secret).bytes, stepAt(now) + stepsAhead);
}

/** The TOTP period, in seconds. */
export const TOTP_PERIOD_SECONDS: number = TOTP_PERIOD_S;
