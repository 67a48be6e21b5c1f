import { ok, refuse, type Result } from '../errors.js';

/**
 * Every action a stale session may not take: each changes how the account signs in, lets another
 * principal in, or commits the account to something that outlives its sessions. Each needs its
 * session to have proved a credential (password, second factor, recovery proof, OpenID, or a
 * password change) within the reauthentication window, so that a stolen access token can read for
 * its fifteen minutes but never add a way in that survives the owner's password change and
 * revoke-all: no sign-in method, no co-owner of a sponsored account, no handle, no public record, no
 * upload link reserving the owner's quota, no deletion of the account. This is the one list: the services name their action
 * from it, and the HTTP test of the rule is generated from it.
 */
export const RECENT_AUTH_ACTIONS = [
  'oidc_link',
  'oidc_unlink',
  'totp_enroll',
  'totp_verify_enrollment',
  'totp_disable',
  'first_identity_anchor',
  'sponsored_owner_add',
  'handle_claim',
  'discovery_publish',
  'upload_link_create',
  'account_delete',
] as const;
export type RecentAuthAction = (typeof RECENT_AUTH_ACTIONS)[number];

/** `SVC_REAUTH_WINDOW_S` when unset. */
export const DEFAULT_REAUTH_WINDOW_MS = 300_000;

/**
 * May a session whose holder last proved a credential at `authenticatedAt` take one of the
 * RECENT_AUTH_ACTIONS at `now`? A proof dated after `now` (a clock step) counts as stale: nothing here may be
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
