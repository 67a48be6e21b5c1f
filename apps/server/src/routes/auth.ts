import * as v from 'valibot';
import { readCohortHash, type Profile, type TokenPair as CoreTokenPair } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { iso, isoOrNull, json, noContent, unwrap } from '../http/respond.js';
import {
  Address,
  Advisory,
  Count,
  DisplayName,
  NewPassword,
  SignedIn,
  SignInTicketField,
  Timestamp,
  TokenPair,
  Uuid,
} from './schemas.js';
import { signInSource } from '../http/request.js';

export const tokenPairBody = (p: CoreTokenPair) => ({
  session_id: p.sessionId,
  session_token: p.sessionToken,
  access_token: p.accessToken,
  token_type: 'Bearer' as const,
  expires_in: p.expiresIn,
  ...(p.signInTicket !== undefined ? { sign_in_ticket: p.signInTicket } : {}),
});

const ProfileBody = v.object({
  account_id: Uuid,
  address: v.pipe(
    v.nullable(v.string()),
    v.description('null for a sponsored account or an OpenID account without a verified email'),
  ),
  display_name: v.nullable(v.string()),
  created_at: Timestamp,
  handle: v.nullable(v.string()),
});
named('Profile', ProfileBody);
const profileBody = (
  p: { accountId: string; address: string | null; displayName: string | null; createdAt: number },
  handle: string | null,
  sponsored = false,
) => ({
  account_id: p.accountId,
  // A sponsored account (acted as through X-Svc-Act-As) has no address.
  address: sponsored ? null : p.address,
  display_name: p.displayName,
  created_at: isoOrNull(p.createdAt),
  handle,
});

const Password = v.string();
/** When the caller last confirmed who it is: what the recent-sign-in rule reads. */
export const Reauthenticated = named('Reauthenticated', v.object({ reauthenticated_at: Timestamp }));
/** A wrong password from a signed-in caller (reauthenticate, password change) is 403, not login's 401. */

/**
 * The profile and its handle: from the per-request join when the profile came from it (the
 * authenticated GET reads nothing more), else one read of the handle.
 */
async function withHandle(deps: AppDeps, p: Profile): Promise<[Profile, string | null]> {
  if (p.handleUser !== undefined) return [p, p.handleUser === null ? null : deps.discovery.formatHandle(p.handleUser)];
  return [p, await deps.discovery.handleOf(p.accountId)];
}

/** Registration, sign-in, refresh, re-authentication, password change and the profile. */
export function authRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'POST',
      path: '/v1/auth/register',
      noStore: true,
      tag: 'auth',
      summary: 'Create an account and sign in (address and password only)',
      auth: false,
      body: {
        type: 'json',
        name: 'RegisterRequest',
        schema: v.strictObject({ address: Address, password: NewPassword }),
      },
      responses: { 200: { description: 'The new account signed in', schema: SignedIn } },
      localAuth: true,
      errors: [
        'error.auth.registration_closed',
        'error.auth.user_already_exists',
        'error.auth.weak_password',
        'error.request.invalid',
        'error.server.busy',
        'error.auth.account_locked',
      ],
      handle: async ({ c, body }) => {
        const pair = unwrap(
          await deps.accounts.register({
            address: body.address,
            password: body.password,
            source: signInSource(c, deps.config.trustedProxies),
          }),
        );
        return json(c, 200, tokenPairBody(pair));
      },
    }),
    route({
      method: 'POST',
      path: '/v1/auth/login',
      noStore: true,
      tag: 'auth',
      summary: 'Sign in with address and password',
      auth: false,
      write: false,
      body: {
        type: 'json',
        name: 'LoginRequest',
        schema: v.strictObject({
          address: v.string(),
          password: Password,
          cohort_hash: Advisory,
          device_id: Advisory,
          sign_in_ticket: SignInTicketField,
        }),
      },
      responses: {
        200: { description: 'Signed in (no confirmed second factor)', schema: SignedIn },
        202: {
          description:
            'A second factor is confirmed: answer the challenge at /v1/auth/login/verify-totp, or with the identity key at /v1/auth/login/recover-totp (which signs over account_id)',
          name: 'SecondFactorChallenge',
          schema: v.object({ challenge: v.string(), expires_in: Count, account_id: Uuid }),
        },
      },
      localAuth: true,
      errors: [
        'error.request.invalid',
        'error.auth.invalid_credentials',
        'error.auth.account_locked',
        'error.auth.throttled',
        'error.auth.unavailable',
        'error.server.busy',
      ],
      handle: async ({ c, body }) => {
        const result = await deps.accounts.login({
          address: body.address,
          password: body.password,
          cohortHash: readCohortHash(body.cohort_hash),
          signInTicket: body.sign_in_ticket ?? null,
          source: signInSource(c, deps.config.trustedProxies),
        });
        // Too many wrong passwords for this address or from this client address, or too many wrong
        // codes for this account lately: 429 with Retry-After.
        if (!result.ok) throw HttpProblem.from(result);
        const outcome = result.value;
        if (outcome.kind === 'challenge')
          return json(c, 202, {
            challenge: outcome.challenge,
            expires_in: outcome.expiresIn,
            account_id: outcome.accountId,
          });
        return json(c, 200, tokenPairBody(outcome.pair));
      },
    }),
    route({
      method: 'POST',
      path: '/v1/auth/refresh',
      noStore: true,
      tag: 'auth',
      summary: 'Mint a new access token with the session token',
      auth: false,
      write: false,
      body: { type: 'json', name: 'RefreshRequest', schema: v.strictObject({ session_token: v.string() }) },
      responses: {
        200: {
          description: 'A fresh access token',
          name: 'AccessToken',
          schema: v.object({ access_token: v.string(), token_type: v.literal('Bearer'), expires_in: v.literal(900) }),
        },
      },
      errors: ['error.auth.session_invalid', 'error.auth.unavailable'],
      handle: async ({ c, body }) => {
        const grant = unwrap(await deps.sessions.refresh(body.session_token));
        return json(c, 200, { access_token: grant.accessToken, token_type: 'Bearer', expires_in: grant.expiresIn });
      },
    }),
    route({
      method: 'POST',
      path: '/v1/auth/reauthenticate',
      tag: 'auth',
      summary: 'Confirm the password again (no second factor)',
      auth: true,
      body: { type: 'json', name: 'ReauthenticateRequest', schema: v.strictObject({ password: Password }) },
      responses: { 200: { description: 'Confirmed', schema: Reauthenticated } },
      localAuth: true,
      errors: [
        'error.auth.invalid_credentials',
        'error.auth.no_local_password',
        'error.auth.session_invalid',
        'error.server.busy',
        'error.sponsored.no_identity',
        'error.auth.throttled',
      ],
      statusContext: 'reconfirming',
      handle: async ({ c, body, principal }) => {
        const r = unwrap(
          await deps.accounts.reauthenticate(principal, body.password, signInSource(c, deps.config.trustedProxies)),
        );
        return json(c, 200, { reauthenticated_at: iso(r.reauthenticatedAt) });
      },
    }),
    route({
      method: 'POST',
      path: '/v1/auth/password',
      noStore: true,
      tag: 'auth',
      summary: 'Change the password: closes every session and re-opens the caller under its own id',
      auth: true,
      body: {
        type: 'json',
        name: 'PasswordChange',
        schema: v.strictObject({ current_password: Password, new_password: NewPassword }),
      },
      responses: {
        200: { description: "A fresh token pair for the caller's unchanged session id", schema: TokenPair },
      },
      localAuth: true,
      errors: [
        'error.auth.invalid_credentials',
        'error.auth.account_locked',
        'error.auth.weak_password',
        'error.auth.no_local_password',
        'error.server.busy',
        'error.sponsored.no_identity',
        'error.auth.throttled',
      ],
      statusContext: 'reconfirming',
      handle: async ({ c, body, principal }) => {
        const pair = unwrap(
          await deps.accounts.changePassword(principal, {
            currentPassword: body.current_password,
            newPassword: body.new_password,
            source: signInSource(c, deps.config.trustedProxies),
          }),
        );
        return json(c, 200, tokenPairBody(pair));
      },
    }),
    route({
      method: 'GET',
      path: '/v1/auth/profile',
      tag: 'profile',
      summary: "The caller's own profile",
      auth: true,
      responses: { 200: { description: 'Profile', schema: ProfileBody } },
      handle: async ({ c, principal }) =>
        json(
          c,
          200,
          profileBody(
            ...(await withHandle(deps, unwrap(await deps.accounts.profile(principal)))),
            principal.actingOwnerId !== undefined,
          ),
        ),
    }),
    route({
      method: 'GET',
      path: '/v1/auth/methods',
      tag: 'auth',
      summary:
        'Every way into the account the request acts as: a usable password, a confirmed second factor, each linked OpenID identity ' +
        '(a sponsored account, reached with X-Svc-Act-As, has none)',
      auth: true,
      responses: {
        200: {
          description: 'The sign-in methods',
          name: 'SignInMethods',
          schema: v.object({
            password: v.pipe(v.boolean(), v.description('A local password exists and local sign-in is on')),
            totp: v.pipe(v.boolean(), v.description('A confirmed second factor')),
            oidc: v.array(
              named('OidcIdentity', v.object({ issuer: v.string(), subject: v.string(), linked_at: Timestamp })),
            ),
          }),
        },
      },
      handle: async ({ c, principal }) => {
        const m = await deps.signInMethods.list(principal);
        return json(c, 200, {
          password: m.password,
          totp: m.totp,
          oidc: m.oidc.map((l) => ({ issuer: l.issuer, subject: l.subject, linked_at: iso(l.linkedAt) })),
        });
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/auth/account',
      tag: 'auth',
      summary:
        'Delete the account (needs a recent sign-in): every session, second factor, OpenID link, device directory, public record, share and upload link ends; ' +
        'open uploads and drops are cancelled; every asset is purged (the bytes are credited by the next GC sweep); the sponsored accounts it sponsors ' +
        'are deleted the same way and its co-ownerships removed; capability tokens minted for it are revoked. The address may register again (a new ' +
        'account); the handle stays retired. Acting as a sponsored account (X-Svc-Act-As), its sponsor deletes that account; another owner is refused',
      auth: true,
      responses: { 204: { description: 'Deleted: every token of the account is refused from now on' } },
      errors: ['error.auth.reauthentication_required', 'error.auth.not_an_owner', 'error.not_found'],
      handle: async ({ c, principal }) => {
        unwrap(await deps.deletion.deleteOwn(principal));
        return noContent(c);
      },
    }),
    route({
      method: 'PATCH',
      path: '/v1/auth/profile',
      tag: 'profile',
      summary: 'Set or clear the display name (absent leaves it, null or empty clears it)',
      auth: true,
      body: {
        type: 'json',
        name: 'ProfileUpdate',
        schema: v.strictObject({ display_name: v.optional(v.nullable(DisplayName)) }),
      },
      responses: { 200: { description: 'Updated profile', schema: ProfileBody } },
      errors: ['error.profile.invalid_display_name', 'error.request.invalid', 'error.sponsored.no_identity'],
      handle: async ({ c, body, principal }) => {
        const patch = 'display_name' in body ? { displayName: body.display_name ?? null } : {};
        return json(
          c,
          200,
          profileBody(
            ...(await withHandle(deps, unwrap(await deps.accounts.updateProfile(principal, patch)))),
            principal.actingOwnerId !== undefined,
          ),
        );
      },
    }),
  ];
}
