import * as v from 'valibot';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { route, type AnyRoute } from '../http/route.js';
import { json } from '../http/respond.js';

const REVOCATION_WINDOW_S = 86_400;

// The public records' shapes, for the API reference (and the tests that check every answer against it).
const Version = v.pipe(v.string(), v.regex(/^\d{4}-\d{2}-\d{2}$/), v.description('A protocol version, YYYY-MM-DD'));
const Window = v.object({ min: Version, max: Version });
const Jwk = v.object({ kty: v.literal('OKP'), crv: v.literal('Ed25519'), x: v.string(), kid: v.string(), alg: v.literal('EdDSA'), use: v.literal('sig') });
const ServerInfo = v.object({
  api_base_url: v.string(),
  auth: v.object({ local: v.boolean(), oidc: v.pipe(v.unknown(), v.description('null when OpenID Connect sign-in is off')) }),
  federation_endpoint: v.string(),
  signing_keys: v.pipe(v.object({ keys: v.array(Jwk) }), v.description('JWKS of the keys that verify access tokens')),
  protocol_version: Window,
  min_protocol_version: v.array(v.unknown()),
});
const RevokedJti = v.object({ window_s: v.literal(REVOCATION_WINDOW_S), revoked: v.array(v.unknown()) });
const Deprecation = v.object({ protocol_version: Window, min_client_build: v.string(), announcements: v.array(v.unknown()) });
const AttestationKeys = v.object({ keys: v.array(v.unknown()), history: v.array(v.unknown()) });

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
      responses: { 200: { description: 'Server info', schema: ServerInfo } },
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
      responses: { 200: { description: 'Revocation list (empty in v1: no capability tokens are issued yet)', schema: RevokedJti } },
      handle: ({ c }) => json(c, 200, { window_s: REVOCATION_WINDOW_S, revoked: [] }),
    }),
    route({
      method: 'GET',
      path: '/.well-known/svc/deprecation',
      tag: 'public',
      summary: 'Minimum supported client announcements',
      auth: false,
      versioned: false,
      responses: { 200: { description: 'The current window and any announced cut-offs', schema: Deprecation } },
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
      responses: { 200: { description: 'Attestation keys (none issued in v1) and history', schema: AttestationKeys } },
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
