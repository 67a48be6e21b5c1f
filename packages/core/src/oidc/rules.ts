import { constantTimeEqual, sha256, toBase64url, utf8 } from '../encoding/bytes.js';
import { ok, refuse, type Result } from '../errors.js';
import { holds, type RowFilter } from '../filters/filter.js';
import type { IdentityLink } from '../ports/identity-link-store.js';
import type { VerifiedIdentity } from '../ports/identity-provider.js';
import type { LoginCodeRecord, OidcPurpose } from '../ports/oidc-flow-store.js';
import { normalizeAddress, normalizeDisplayName, type NormalizedAddress } from '../profile/rules.js';
import { decideOwnIdentity } from '../sponsorship/rules.js';

/**
 * The decisions of OpenID Connect sign-in, as pure functions: the service reads the stores and the
 * clock, and asks these what to do. Nothing here performs I/O.
 */

/** A started flow may reach its callback for 10 minutes. */
export const FLOW_TTL_MS = 600_000;
/** A login code handed to the client may be redeemed for 60 seconds. */
export const LOGIN_CODE_TTL_MS = 60_000;
/** A reauthentication counts when the person authenticated at the provider at most 5 minutes ago. */
export const REAUTH_FRESH_MS = 300_000;
/** A provider's clock may run this far ahead of ours; an `auth_time` further in the future proves nothing. */
export const AUTH_TIME_SKEW_MS = 60_000;

/** base64url of a SHA-256: what an app's PKCE S256 challenge looks like. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** RFC 7636 code verifier: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * Where the client may be sent back to: exactly one of the configured URIs, always with the app's
 * PKCE challenge. It binds the flow to the app instance that started it, so a login code caught on
 * its way back is useless to whoever caught it, and a victim lured to an attacker's callback URL
 * cannot be signed in as the attacker (login CSRF): the victim's app never holds the verifier.
 */
export function checkReturnTo(
  returnTo: string,
  allowed: readonly string[],
  appChallenge: string | null,
): Result<void, 'error.oidc.return_to_invalid' | 'error.oidc.app_challenge_required' | 'error.request.invalid'> {
  if (!allowed.includes(returnTo))
    return refuse('error.oidc.return_to_invalid', 'return_to is not one of the configured return URIs.');
  if (appChallenge === null)
    return refuse(
      'error.oidc.app_challenge_required',
      'Every flow needs an app_challenge (PKCE S256 between the app and this server).',
    );
  if (!S256_CHALLENGE.test(appChallenge)) {
    return refuse(
      'error.request.invalid',
      'app_challenge must be the base64url SHA-256 of a verifier (43 characters).',
    );
  }
  return ok(undefined);
}

/** The caller of a flow: an account, perhaps acted as by one of its owners (`X-Svc-Act-As`). */
type FlowCaller = { readonly accountId: string; readonly actingOwnerId?: string | undefined };

/**
 * Who may start a flow for a purpose: `sign_in` needs nobody (and binds to nobody); `link` and
 * `reauthenticate` act on the signed-in caller's account, which must be one with an identity of
 * its own: a sponsored account has no way to sign in, so nothing may be linked to it nor proved
 * for it (and an owner acting as one would otherwise prove or link for the owner's own session).
 * Returns the initiator.
 */
export function initiatorFor(
  purpose: OidcPurpose,
  caller: FlowCaller | null,
): Result<string | null, 'error.auth.session_invalid' | 'error.sponsored.no_identity'> {
  if (purpose === 'sign_in') return ok(null);
  if (caller === null)
    return refuse('error.auth.session_invalid', `purpose ${purpose} needs the access token of a signed-in account.`);
  const own = decideOwnIdentity(caller);
  return own.ok ? ok(caller.accountId) : own;
}

/**
 * A stored flow or login code lapses at its expiry (parameter `now`): it is live strictly before
 * it, and a store drops the lapsed ones when the next flow is stored.
 */
export const OIDC_LAPSED: RowFilter<'expiresAt'> = [{ op: '<=', field: 'expiresAt', param: 'now' }];

export function isLive(record: { readonly expiresAt: number }, now: number): boolean {
  return !holds(OIDC_LAPSED, record, { now });
}

/** The nonce of a flow is derived from its state: nothing more to store, and unique per flow. */
export function nonceForState(state: string): string {
  return toBase64url(sha256(utf8(`svc-oidc-nonce/v1:${state}`)));
}

/** The address a first sign-in may take: the provider's email only when it says it verified it. */
export function verifiedAddress(identity: VerifiedIdentity): NormalizedAddress | null {
  if (!identity.emailVerified || identity.email === null) return null;
  const address = normalizeAddress(identity.email);
  return address.ok ? address.value : null;
}

/** The `name` claim becomes the display name at creation when the profile rules accept it. */
export function initialDisplayName(identity: VerifiedIdentity): string | null {
  const name = normalizeDisplayName(identity.name);
  return name.ok ? name.value : null;
}

export type SignInDecision =
  | { readonly kind: 'existing'; readonly accountId: string }
  | { readonly kind: 'create'; readonly address: NormalizedAddress | null; readonly displayName: string | null };

/**
 * Which account a sign-in lands on: the one (issuer, subject) is bound to; otherwise a new one. A
 * verified email another account already holds is never bound silently: the owner must link from
 * a signed-in session.
 */
export function decideSignIn(input: {
  readonly link: IdentityLink | null;
  readonly identity: VerifiedIdentity;
  /** The account holding the verified email's address key, if any. */
  readonly addressHolder: string | null;
}): Result<SignInDecision, 'error.auth.user_already_exists'> {
  if (input.link !== null) return ok({ kind: 'existing', accountId: input.link.accountId });
  if (input.addressHolder !== null) {
    return refuse(
      'error.auth.user_already_exists',
      'An account holds this email; sign in to it and link the provider from there.',
    );
  }
  return ok({
    kind: 'create',
    address: verifiedAddress(input.identity),
    displayName: initialDisplayName(input.identity),
  });
}

/** A link may bind an identity that is free or already the initiator's; never another account's. */
export function decideLink(link: IdentityLink | null, initiator: string): Result<void, 'error.oidc.already_linked'> {
  if (link !== null && link.accountId !== initiator)
    return refuse('error.oidc.already_linked', 'This provider identity belongs to another account.');
  return ok(undefined);
}

/**
 * A reauthentication counts when the identity is the initiator's own and the provider authenticated
 * the person recently. Returns the authentication time.
 */
export function decideReauthentication(
  link: IdentityLink | null,
  initiator: string,
  authTime: number | null,
  now: number,
): Result<number, 'error.auth.not_the_initiator' | 'error.oidc.reauthentication_stale'> {
  if (link === null || link.accountId !== initiator)
    return refuse(
      'error.auth.not_the_initiator',
      'This provider identity is not linked to the account that started the flow.',
    );
  if (authTime === null || now - authTime > REAUTH_FRESH_MS || authTime - now > AUTH_TIME_SKEW_MS)
    return refuse('error.oidc.reauthentication_stale', 'The provider did not authenticate the person again.');
  return ok(authTime);
}

/** Does the app's verifier answer the challenge the flow started with? Absent challenge: nothing to prove. */
export function appVerifierMatches(challenge: string | null, verifier: string | null): boolean {
  if (challenge === null) return true;
  if (verifier === null || !VERIFIER.test(verifier)) return false;
  return constantTimeEqual(utf8(toBase64url(sha256(utf8(verifier)))), utf8(challenge));
}

/**
 * Redeeming a login code (already taken from the store, so never twice): it must be live, answer
 * the app's challenge, and for `link` and `reauthenticate` be presented by the initiator.
 */
export function decideOidcCompletion(
  code: LoginCodeRecord | null,
  now: number,
  caller: FlowCaller | null,
  appVerifier: string | null,
): Result<
  LoginCodeRecord,
  | 'error.auth.login_code_invalid'
  | 'error.auth.session_invalid'
  | 'error.auth.not_the_initiator'
  | 'error.sponsored.no_identity'
> {
  if (code === null || !isLive(code, now))
    return refuse('error.auth.login_code_invalid', 'The login code is unknown, used or expired.');
  if (!appVerifierMatches(code.appChallenge, appVerifier))
    return refuse('error.auth.login_code_invalid', 'The app_verifier does not match the flow.');
  if (code.purpose === 'sign_in') return ok(code);
  if (caller === null)
    return refuse(
      'error.auth.session_invalid',
      'This login code needs the access token of the account that started the flow.',
    );
  const own = decideOwnIdentity(caller);
  if (!own.ok) return own;
  if (caller.accountId !== code.accountId)
    return refuse('error.auth.not_the_initiator', 'Another account started this flow.');
  return ok(code);
}

/**
 * Unlinking may not leave an account without any usable way to sign in: a password counts only
 * while local sign-in is on (`SVC_AUTH_LOCAL`), and the links being removed (every link at this
 * provider) count for nothing.
 */
export function decideUnlink(input: {
  readonly hasLocalPassword: boolean;
  readonly localSignIn: boolean;
  /** The account's links at this server's provider: the ones an unlink removes. */
  readonly links: number;
}): Result<void, 'error.auth.last_sign_in_method' | 'error.not_found'> {
  if (input.links === 0) return refuse('error.not_found', 'This account has no identity at the provider.');
  if (!(input.hasLocalPassword && input.localSignIn))
    return refuse('error.auth.last_sign_in_method', 'The provider is the only usable way into this account.');
  return ok(undefined);
}

/**
 * Completing a flow that changes the account (link) or proves a credential for such a change
 * (reauthenticate) is a write for the protocol window; signing in is not, so an old client can
 * still get in.
 */
export function completionIsWrite(purpose: OidcPurpose): boolean {
  return purpose !== 'sign_in';
}
