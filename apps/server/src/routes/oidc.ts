import type { Context } from 'hono';
import * as v from 'valibot';
import { readCohortHash, type OidcService, type Principal } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { iso, json, noContent, unwrap } from '../http/respond.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { Advisory, SignedIn } from './schemas.js';
import { Reauthenticated, tokenPairBody } from './auth.js';

function configured(deps: AppDeps): OidcService {
  if (deps.oidc === null)
    throw new HttpProblem('error.not_found', 'OpenID Connect sign-in is not configured on this server.');
  return deps.oidc;
}

/**
 * Only a link or reauthenticate code needs the caller, and which one a code is core learns by taking
 * it. So a token that is refused (or names an account the caller does not own) is held back until
 * core says the code needed a caller: a sign-in is not refused for a stale header, and the refusal
 * the caller then gets names its token (401 with error="invalid_token", or 403 not_an_owner).
 * An unreadable session ledger still fails closed.
 */
async function heldBack(
  caller: () => Promise<Principal | null>,
): Promise<{ who: Principal | null; refusal: HttpProblem | null }> {
  try {
    return { who: await caller(), refusal: null };
  } catch (err) {
    if (err instanceof HttpProblem && err.code !== 'error.auth.unavailable') return { who: null, refusal: err };
    throw err;
  }
}

/** Where the browser goes after the callback: the flow's return URI with one parameter added. */
function backTo(c: Context, returnTo: string, name: 'login_code' | 'error', value: string): Response {
  const url = new URL(returnTo);
  url.searchParams.set(name, value);
  const protocol =
    (c.env as { responseHeaders?: { protocol: Record<string, string> } } | undefined)?.responseHeaders?.protocol ?? {};
  return new Response(null, {
    status: 302,
    headers: { ...protocol, location: url.toString(), 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
  });
}

const Purpose = v.picklist(['sign_in', 'link', 'reauthenticate']);
const AppSecret = v.pipe(v.string(), v.maxLength(128));

/** OpenID Connect sign-in as a relying party: start, callback, complete, unlink. */
export function oidcRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'POST',
      path: '/v1/auth/oidc/start',
      tag: 'oidc',
      summary: 'Start an OpenID Connect flow: sign in, link the provider to the caller, or reauthenticate the caller',
      auth: false,
      // link and reauthenticate act on the caller's account; sign_in reads no token.
      optionalAuth: true,
      write: false,
      body: {
        type: 'json',
        name: 'OidcStartRequest',
        schema: v.strictObject({
          return_to: v.pipe(
            v.string(),
            v.description('One of the configured return URIs (exact match): https, or an app scheme'),
          ),
          purpose: v.optional(
            v.pipe(
              Purpose,
              v.description('sign_in (default, no token); link and reauthenticate need the Bearer access token'),
            ),
          ),
          app_challenge: v.optional(
            v.pipe(
              AppSecret,
              v.description(
                'base64url SHA-256 of a verifier the app keeps (PKCE S256 toward this server); required for every return_to (absent: 400 error.oidc.app_challenge_required)',
              ),
            ),
          ),
        }),
      },
      responses: {
        200: {
          description: 'Send the browser to authorization_url; the flow lives 600 seconds',
          name: 'OidcStart',
          schema: v.object({ authorization_url: v.string(), expires_in: v.literal(600) }),
        },
      },
      errors: [
        'error.oidc.return_to_invalid',
        'error.oidc.app_challenge_required',
        'error.request.invalid',
        'error.auth.reauthentication_required',
        'error.sponsored.no_identity',
        'error.auth.unavailable',
        'error.not_found',
      ],
      handle: async ({ c, body, caller: callerOf }) => {
        const oidc = configured(deps);
        const purpose = body.purpose ?? 'sign_in';
        const caller = purpose === 'sign_in' ? null : await callerOf();
        const started = unwrap(
          await oidc.start({ returnTo: body.return_to, purpose, appChallenge: body.app_challenge ?? null }, caller),
        );
        return json(c, 200, { authorization_url: started.authorizationUrl, expires_in: started.expiresIn });
      },
    }),
    route({
      method: 'GET',
      path: '/v1/auth/oidc/callback',
      tag: 'oidc',
      summary:
        "The provider's redirect (the registered redirect URI): sends the browser back to return_to with a login code or an error",
      auth: false,
      versioned: false,
      query: v.looseObject({
        code: v.optional(v.string()),
        state: v.optional(v.string()),
        error: v.optional(v.string()),
        error_description: v.optional(v.string()),
        iss: v.optional(v.string()),
      }),
      responses: {
        302: {
          description:
            'To return_to with `login_code` (32 random bytes, base64url, single use, 60 s) or with `error`: error.oidc.provider_denied, ' +
            'error.oidc.exchange_failed, error.oidc.id_token_invalid, error.oidc.reauthentication_stale, error.auth.user_already_exists, error.auth.registration_closed, ' +
            'error.oidc.already_linked, error.auth.not_the_initiator',
        },
      },
      errors: ['error.oidc.state_invalid', 'error.not_found'],
      handle: async ({ c }) => {
        const oidc = configured(deps);
        const outcome = await oidc.callback(c.req.query());
        if (outcome.kind === 'state_invalid')
          throw new HttpProblem('error.oidc.state_invalid', 'The state is absent, unknown, used or expired.');
        return 'loginCode' in outcome
          ? backTo(c, outcome.returnTo, 'login_code', outcome.loginCode)
          : backTo(c, outcome.returnTo, 'error', outcome.error);
      },
    }),
    route({
      method: 'POST',
      path: '/v1/auth/oidc/complete',
      noStore: true,
      tag: 'oidc',
      summary:
        'Redeem a login code: opens the session (sign_in), binds the provider (link) or confirms a reauthentication',
      auth: false,
      // link and reauthenticate codes need the token of the account that started the flow.
      optionalAuth: true,
      // Signing in is not a write (an old client can still get in); link and reauthenticate
      // completions are, and core refuses them below Min once it knows the code's purpose.
      write: false,
      body: {
        type: 'json',
        name: 'OidcCompleteRequest',
        schema: v.strictObject({
          login_code: v.string(),
          app_verifier: v.optional(v.pipe(AppSecret, v.description("The verifier behind the flow's app_challenge"))),
          cohort_hash: Advisory,
          device_id: Advisory,
        }),
      },
      responses: {
        200: {
          description:
            'sign_in: a token pair (the session is opened with method oidc); reauthenticate: the reauthentication time',
          name: 'OidcCompletion',
          schema: v.union([SignedIn, Reauthenticated]),
        },
        204: { description: 'link: the provider identity is bound to the caller' },
      },
      errors: [
        'error.auth.login_code_invalid',
        'error.auth.not_the_initiator',
        'error.sponsored.no_identity',
        'error.auth.account_locked',
        'error.oidc.already_linked',
        'error.auth.reauthentication_required',
        'error.protocol.below_min',
        'error.request.invalid',
        'error.not_found',
      ],
      handle: async ({ c, body, version, caller: callerOf }) => {
        const oidc = configured(deps);
        const caller = await heldBack(callerOf);
        const completed = await oidc.complete(
          {
            loginCode: body.login_code,
            appVerifier: body.app_verifier ?? null,
            cohortHash: readCohortHash(body.cohort_hash),
            version,
          },
          caller.who,
        );
        if (!completed.ok && completed.code === 'error.auth.session_invalid' && caller.refusal !== null)
          throw caller.refusal;
        const done = unwrap(completed);
        if (done.kind === 'session') return json(c, 200, tokenPairBody(done.pair));
        if (done.kind === 'reauthenticated') return json(c, 200, { reauthenticated_at: iso(done.at) });
        return noContent(c);
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/auth/oidc/link',
      tag: 'oidc',
      summary:
        "Remove the caller's identity at the provider (needs a recent sign-in; refused when no other usable way in remains)",
      auth: true,
      responses: { 204: { description: 'Unlinked' } },
      errors: [
        'error.auth.last_sign_in_method',
        'error.auth.reauthentication_required',
        'error.not_found',
        'error.auth.session_invalid',
      ],
      handle: async ({ c, principal }) => {
        unwrap(await configured(deps).unlink(principal));
        return noContent(c);
      },
    }),
  ];
}
