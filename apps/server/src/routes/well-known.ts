import * as v from 'valibot';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { route, type AnyRoute } from '../http/route.js';
import { bytes, iso, json } from '../http/respond.js';
import { REVOCATION_WINDOW_S } from '@strongroom/core';

/** WebFinger answers are for any web page to read. */
const CORS_ANY = { 'access-control-allow-origin': '*' };

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
          auth: { local: true, oidc: null },
          federation_endpoint: `${base}/v1/discovery/lookup`,
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
      responses: {
        200: {
          description: 'Capability tokens this server minted and revoked in the last 24 hours (computed from the clock; nothing older)',
          schema: v.object({
            issuer: v.string(),
            window_s: v.literal(REVOCATION_WINDOW_S),
            revoked: v.array(v.object({ jti: v.string(), revoked_at: v.string(), exp: v.string() })),
          }),
        },
      },
      handle: async ({ c }) => {
        const record = await deps.federation.revokedRecord();
        return json(c, 200, {
          issuer: record.issuer,
          window_s: REVOCATION_WINDOW_S,
          revoked: record.revoked.map((r) => ({ jti: r.jti, revoked_at: iso(r.revokedAt), exp: iso(r.expiresAt) })),
        });
      },
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
      summary: 'Anonymous WebFinger (JRD): only a published handle of this host, with its display name; CORS open to any origin',
      auth: false,
      versioned: false,
      query: v.object({ resource: v.pipe(v.string(), v.regex(/^acct:[^@\s]+@[^@\s]+$/, 'must be acct:user@host')) }),
      responses: {
        200: {
          description: 'The public record',
          contentType: 'application/jrd+json',
          schema: v.object({ subject: v.string(), properties: v.object({ 'urn:svc:display_name': v.nullable(v.string()) }) }),
        },
        404: { description: 'No public record: the same bytes for no account, an unpublished one and another host' },
      },
      errors: ['error.request.invalid', 'error.not_found'],
      handle: async ({ c, query }) => {
        const found = await deps.discovery.webfinger(query.resource);
        if (!found.ok) {
          const problem = HttpProblem.from(found);
          problem.headers = CORS_ANY;
          throw problem;
        }
        const body = JSON.stringify({ subject: found.value.subject, properties: { 'urn:svc:display_name': found.value.displayName } });
        const res = bytes(c, 200, new TextEncoder().encode(body), 'application/jrd+json');
        res.headers.set('access-control-allow-origin', '*');
        return res;
      },
    }),
  ];
}
