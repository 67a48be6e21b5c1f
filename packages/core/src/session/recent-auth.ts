import { ok, refuse, type Result } from '../errors.js';

/**
 * Every change to how an account signs in. Each needs its session to have proved a credential
 * (password, second factor, recovery proof, OpenID) within the reauthentication window, so that a
 * stolen access token can read for its fifteen minutes but never add or remove a way in. This is
 * the one list: the services name their change from it, and the HTTP test of the rule is
 * generated from it.
 */
export const SIGN_IN_CHANGES = [
  'oidc_link',
  'oidc_unlink',
  'totp_enroll',
  'totp_verify_enrollment',
  'totp_disable',
  'first_identity_anchor',
] as const;
export type SignInChange = (typeof SIGN_IN_CHANGES)[number];

/** `SVC_REAUTH_WINDOW_S` when unset. */
export const DEFAULT_REAUTH_WINDOW_MS = 300_000;

/**
 * May a session whose holder last proved a credential at `authenticatedAt` change how the account
 * signs in at `now`? A proof dated after `now` (a clock step) counts as stale: nothing here may be
 * extended by a clock that later runs back.
 */
export function decideRecentAuthentication(
  authenticatedAt: number | null,
  now: number,
  windowMs: number,
): Result<void, 'error.auth.reauthentication_required'> {
  if (authenticatedAt === null || authenticatedAt > now || now - authenticatedAt > windowMs) {
    return refuse('error.auth.reauthentication_required', 'This change needs a recent sign-in; reauthenticate first.');
  }
  return ok(undefined);
}
