import * as v from 'valibot';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { route, type AnyRoute } from '../http/route.js';
import { json } from '../http/respond.js';

const REVOCATION_WINDOW_S = 86_400;

/**
 * Public, unauthenticated records. Read before negotiation, so they need no X-Svc-Protocol. None of
 * them lists users.
 */
export function wellKnownRoutes(deps: AppDeps): AnyRoute[] {
  const base = deps.config.baseUrl;
  return [
    route({
      method: 'GET',
      path: '/.well-known/svc/server-info',
      tag: 'public',
      summary: 'Server info: endpoints, signing keys (JWKS) and the supported protocol window',
      auth: false,
      versioned: false,
      responses: { 200: { description: 'Server info' } },
      handle: async ({ c }) =>
        json(c, 200, {
          api_base_url: base,
          auth: {
            local: deps.config.authLocal,
            oidc: deps.config.oidc === null ? null : { issuer: deps.config.oidc.issuer, start_endpoint: `${base}/v1/auth/oidc/start` },
          },
          federation_endpoint: `${base}/v1/federation`,
          signing_keys: await deps.keyRing.jwks(),
          protocol_version: { min: deps.window.min, max: deps.window.max },
          min_protocol_version: [],
        }),
    }),
    route({
      method: 'GET',
      path: '/.well-known/svc/revoked-jti',
      tag: 'public',
      summary: 'Revoked federation capability token ids, at most 24 hours of them',
      auth: false,
      versioned: false,
      responses: { 200: { description: 'Revocation list (empty in v1: no capability tokens are issued yet)' } },
      handle: ({ c }) => json(c, 200, { window_s: REVOCATION_WINDOW_S, revoked: [] }),
    }),
    route({
      method: 'GET',
      path: '/.well-known/svc/deprecation',
      tag: 'public',
      summary: 'Minimum supported client announcements',
      auth: false,
      versioned: false,
      responses: { 200: { description: 'The current window and any announced cut-offs' } },
      handle: ({ c }) =>
        json(c, 200, { protocol_version: { min: deps.window.min, max: deps.window.max }, min_client_build: deps.config.minClientBuild, announcements: [] }),
    }),
    route({
      method: 'GET',
      path: '/.well-known/svc/attestation-keys',
      tag: 'public',
      summary: 'Storage-attestation public keys and their append-only history',
      auth: false,
      versioned: false,
      responses: { 200: { description: 'Attestation keys (none issued in v1) and history' } },
      handle: ({ c }) => json(c, 200, { keys: [], history: [] }),
    }),
    route({
      method: 'GET',
      path: '/.well-known/svc/moved/:user',
      tag: 'public',
      summary: 'Moved certificates: post-v1, not served',
      auth: false,
      versioned: false,
      responses: { 404: { description: 'Always: not served in v1' } },
      handle: () => {
        throw new HttpProblem('error.not_found', 'Moved certificates are not served in v1.');
      },
    }),
    route({
      method: 'GET',
      path: '/.well-known/webfinger',
      tag: 'public',
      summary: 'Anonymous WebFinger: answers only for accounts that opted in (none can yet), otherwise 404',
      auth: false,
      versioned: false,
      query: v.object({ resource: v.pipe(v.string(), v.regex(/^acct:[^@\s]+@[^@\s]+$/, 'must be acct:user@host')) }),
      responses: { 404: { description: 'No public record (the same answer as for no account)' } },
      errors: ['error.request.invalid', 'error.not_found'],
      handle: () => {
        throw new HttpProblem('error.not_found', 'No public record for this resource.');
      },
    }),
  ];
}
