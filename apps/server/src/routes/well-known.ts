import * as v from 'valibot';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { iso } from '../http/respond.js';
import { publicRecord, RECORD_MAX_AGE_S } from '../http/public-record.js';
import {
  effectiveWindow,
  pendingAnnouncements,
  REVOCATION_WINDOW_S,
  type DeprecationAnnouncement,
  type ProtocolWindow,
} from '@strongroom/core';

/** Every public record answers 304 to an If-None-Match naming its current ETag (http/public-record.ts). */
const NOT_MODIFIED = {
  304: { description: 'Not modified: the If-None-Match tag is the current ETag (no body)' },
} as const;

/** WebFinger answers are for any web page to read. */
const CORS_ANY = { 'access-control-allow-origin': '*' };

const Version = v.pipe(v.string(), v.regex(/^\d{4}-\d{2}-\d{2}$/), v.description('Protocol version YYYY-MM-DD'));
const Timestamp = v.pipe(v.string(), v.description('RFC 3339 UTC'));
const Window = v.object({ min: Version, max: Version });
named('ProtocolWindow', Window);
const Jwk = v.object({
  kty: v.literal('OKP'),
  crv: v.literal('Ed25519'),
  x: v.string(),
  kid: v.string(),
  alg: v.literal('EdDSA'),
  use: v.literal('sig'),
});
named('Jwk', Jwk);
const ServerInfo = v.object({
  api_base_url: v.string(),
  auth: v.object({
    local: v.boolean(),
    oidc: v.nullable(v.object({ issuer: v.string(), start_endpoint: v.string() })),
  }),
  federation_endpoint: v.string(),
  signing_keys: v.object({ keys: v.array(Jwk) }),
  protocol_version: Window,
  min_protocol_version: v.pipe(
    v.array(v.object({ min_protocol_version: Version, effective_at: Timestamp })),
    v.description('Announced cut-offs not yet in effect, soonest first'),
  ),
});
named('ServerInfo', ServerInfo);
const DeprecationRecord = v.object({
  protocol_version: v.pipe(
    Window,
    v.description('The window in force now (its min includes every announcement already effective)'),
  ),
  min_client_build: v.string(),
  announcements: v.array(v.object({ min_protocol_version: Version, effective_at: Timestamp, announced_at: Timestamp })),
});
named('DeprecationRecord', DeprecationRecord);
const AttestationKeys = v.object({
  keys: v.pipe(v.array(Jwk), v.description('The key signing receipts now')),
  history: v.array(
    v.object({
      seq: v.pipe(v.number(), v.integer(), v.minValue(1), v.description('From 1, no gaps')),
      kid: v.string(),
      jwk: Jwk,
      added_at: v.pipe(v.number(), v.integer(), v.description('Unix seconds, as hashed')),
      retired_at: v.pipe(v.nullable(Timestamp), v.description('Set once the key is rotated out; not hashed')),
      prev: v.pipe(v.string(), v.description('The previous entry\'s hash; "" for the first')),
      hash: v.pipe(
        v.string(),
        v.description(
          'Hex SHA-256 of the canonical CBOR ["svc-attestation-history/v1", seq, kid, public key bytes, added_at, prev]',
        ),
      ),
      sig: v.pipe(
        v.string(),
        v.description(
          "base64url Ed25519 signature over the 32 hash bytes by the previous entry's key (the first by its own)",
        ),
      ),
    }),
  ),
});
named('AttestationKeys', AttestationKeys);

/**
 * The announcements and the window they make at this instant, from the same cached list the
 * negotiation uses (see DeprecationService): exact for the window, and at most a minute behind an
 * announcement made through another process, which is months from taking effect anyway. Server
 * info is fetched often (clients, peers), so it costs no database read.
 */
async function deprecationState(
  deps: AppDeps,
): Promise<{ window: ProtocolWindow; list: readonly DeprecationAnnouncement[] }> {
  const now = deps.clock.now();
  const list = await deps.deprecations.current(now);
  return { window: effectiveWindow(deps.deprecations.policy.build, list, now), list };
}

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
      responses: { 200: { description: 'Server info', schema: ServerInfo }, ...NOT_MODIFIED },
      errors: ['error.store.unavailable'],
      handle: async ({ c }) => {
        const { window, list } = await deprecationState(deps);
        const now = deps.clock.now();
        return publicRecord(
          c,
          {
            api_base_url: base,
            auth: {
              local: deps.config.authLocal,
              oidc:
                deps.config.oidc === null
                  ? null
                  : { issuer: deps.config.oidc.issuer, start_endpoint: `${base}/v1/auth/oidc/start` },
            },
            federation_endpoint: `${base}/v1/discovery/lookup`,
            signing_keys: await deps.keyRing.jwks(),
            protocol_version: window,
            // The cut-offs still ahead: a client learns months in advance when its version stops writing.
            min_protocol_version: pendingAnnouncements(list, now).map((a) => ({
              min_protocol_version: a.minProtocolVersion,
              effective_at: iso(a.effectiveAt),
            })),
          },
          RECORD_MAX_AGE_S.serverInfo,
        );
      },
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
          description:
            'Capability tokens this server minted and revoked in the last 24 hours (computed from the clock; nothing older)',
          name: 'RevokedTokens',
          schema: v.object({
            issuer: v.string(),
            window_s: v.literal(REVOCATION_WINDOW_S),
            revoked: v.array(v.object({ jti: v.string(), revoked_at: v.string(), exp: v.string() })),
          }),
        },
        ...NOT_MODIFIED,
      },
      handle: async ({ c }) => {
        const record = await deps.federation.revokedRecord();
        return publicRecord(
          c,
          {
            issuer: record.issuer,
            window_s: REVOCATION_WINDOW_S,
            revoked: record.revoked.map((r) => ({ jti: r.jti, revoked_at: iso(r.revokedAt), exp: iso(r.expiresAt) })),
          },
          RECORD_MAX_AGE_S.revokedJti,
        );
      },
    }),
    route({
      method: 'GET',
      path: '/.well-known/svc/deprecation',
      tag: 'public',
      summary:
        'Minimum supported client announcements: the window in force and every announced cut-off, past and future',
      auth: false,
      versioned: false,
      responses: {
        200: {
          description: 'The current window and every announcement, by effective instant',
          schema: DeprecationRecord,
        },
        ...NOT_MODIFIED,
      },
      errors: ['error.store.unavailable'],
      handle: async ({ c }) => {
        const { window, list } = await deprecationState(deps);
        const announcements = [...list]
          .sort((a, b) => a.effectiveAt - b.effectiveAt || a.announcedAt - b.announcedAt)
          .map((a) => ({
            min_protocol_version: a.minProtocolVersion,
            effective_at: iso(a.effectiveAt),
            announced_at: iso(a.announcedAt),
          }));
        return publicRecord(
          c,
          { protocol_version: window, min_client_build: deps.config.minClientBuild, announcements },
          RECORD_MAX_AGE_S.deprecation,
        );
      },
    }),
    route({
      method: 'GET',
      path: '/.well-known/svc/attestation-keys',
      tag: 'public',
      summary: 'Storage-attestation public keys and their append-only history',
      auth: false,
      versioned: false,
      responses: {
        200: {
          description: 'The signing attestation keys (JWK) and the whole hash-chained history, seq ascending',
          schema: AttestationKeys,
        },
        ...NOT_MODIFIED,
      },
      errors: ['error.store.unavailable'],
      handle: async ({ c }) => publicRecord(c, await deps.attestation.record(), RECORD_MAX_AGE_S.attestationKeys),
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
      summary:
        'Anonymous WebFinger (JRD): only a published handle of this host, with its display name; CORS open to any origin',
      auth: false,
      versioned: false,
      query: v.object({ resource: v.pipe(v.string(), v.regex(/^acct:[^@\s]+@[^@\s]+$/i, 'must be acct:user@host')) }),
      responses: {
        200: {
          description: 'The public record',
          contentType: 'application/jrd+json',
          name: 'WebFinger',
          schema: v.object({
            subject: v.string(),
            properties: v.object({ 'urn:svc:display_name': v.nullable(v.string()) }),
          }),
        },
        ...NOT_MODIFIED,
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
        const body = JSON.stringify({
          subject: found.value.subject,
          properties: { 'urn:svc:display_name': found.value.displayName },
        });
        return publicRecord(c, body, RECORD_MAX_AGE_S.webfinger, {
          contentType: 'application/jrd+json',
          headers: CORS_ANY,
        });
      },
    }),
  ];
}
