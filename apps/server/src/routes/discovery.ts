import type { Context } from 'hono';
import * as v from 'valibot';
import {
  parseHandle,
  PeerUnavailableError,
  toBase64url,
  type LookupAnswer,
  type PeerReply,
  type Principal,
} from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { HttpProblem, type ProblemCode } from '../http/problem.js';
import { json, unwrap } from '../http/respond.js';
import { requestHeader } from '../http/request.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';

const HandleUser = v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must match [a-z0-9][a-z0-9._-]{0,63}'));
const HandleBody = v.object({
  handle: v.pipe(v.string(), v.description("user@host, the host being this server's (with a non-default port)")),
});
named('Handle', HandleBody);
const LookupBody = v.object({
  handle: v.string(),
  account_id: v.string(),
  display_name: v.nullable(v.string()),
  identity_key: v.pipe(
    v.nullable(v.string()),
    v.description('The identity anchor (Ed25519 public key), base64url; null before any directory'),
  ),
  directory: v.pipe(
    v.nullable(v.string()),
    v.description(
      'The signed device directory exactly as accepted (canonical CBOR), base64url; verify its signature yourself',
    ),
  ),
});
named('HandleLookup', LookupBody);

const CAPABILITY_SCHEME = 'svccapability ';

/** Who is looking: a local account (access token) or a listed peer (capability token). */
type Looker = { kind: 'local'; principal: Principal } | { kind: 'peer'; issuer: string };

const lookupBody = (a: LookupAnswer) => ({
  handle: a.handle,
  account_id: a.accountId,
  display_name: a.displayName,
  identity_key: a.identityKey === null ? null : toBase64url(a.identityKey),
  directory: a.directory === null ? null : toBase64url(a.directory),
});

/**
 * Reads `Authorization`: Bearer (a local access token, resolved with `X-Svc-Act-As` as on every
 * authenticated route) or SvcCapability (a peer's capability token); anything else is 401.
 */
async function looker(deps: AppDeps, c: Context, caller: () => Promise<Principal | null>): Promise<Looker> {
  const header = requestHeader(c, 'authorization') ?? '';
  const principal = await caller();
  if (principal !== null) return { kind: 'local', principal };
  if (header.slice(0, CAPABILITY_SCHEME.length).toLowerCase() === CAPABILITY_SCHEME) {
    const checked = await deps.federation.check(header.slice(CAPABILITY_SCHEME.length).trim());
    if (!checked.ok) {
      const problem = new HttpProblem(checked.code, checked.detail ?? checked.code);
      const retry = checked.data?.['retry_after'];
      if (typeof retry === 'number') problem.headers = { 'retry-after': String(retry) };
      throw problem;
    }
    return { kind: 'peer', issuer: checked.value.issuer };
  }
  throw new HttpProblem(
    'error.auth.session_invalid',
    'A lookup needs Authorization: Bearer <access token> or SvcCapability <capability token>.',
  );
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * A peer's answer, passed back: its 200 body, or its refusal with status, code and Retry-After only.
 * The rest of a refusal (title, detail, other members) is the peer's text addressed to its own
 * callers ("sign in again"); ours would misread it, so it is replaced by our own words.
 */
function relay(c: Context, reply: PeerReply, peer: string): Response {
  if (!isRecord(reply.body))
    throw new HttpProblem('error.federation.peer_unavailable', `${peer} sent an unreadable answer.`);
  if (reply.status === 200) {
    const answer = v.safeParse(LookupBody, reply.body);
    if (!answer.success) throw new HttpProblem('error.federation.peer_unavailable', `${peer} sent a malformed answer.`);
    return json(c, 200, {
      handle: answer.output.handle,
      account_id: answer.output.account_id,
      display_name: answer.output.display_name,
      identity_key: answer.output.identity_key,
      directory: answer.output.directory,
    });
  }
  // Core's decidePeerAnswer admitted it: a 4xx or 5xx carrying an error code of the usual shape.
  const code = String(reply.body['code']);
  const problem = HttpProblem.relayed(
    code as ProblemCode,
    `The peer server ${peer} refused this lookup (${code}).`,
    reply.status,
  );
  if (reply.retryAfter !== null && /^\d{1,9}$/.test(reply.retryAfter))
    problem.headers = { 'retry-after': reply.retryAfter };
  throw problem;
}

/** Handles, the opt-in public record, and authenticated lookups, local or forwarded to a peer. */
export function discoveryRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'PUT',
      path: '/v1/discovery/handle',
      tag: 'discovery',
      summary: "Claim the caller's handle, user@<this server's host>. Set once: it cannot be changed",
      auth: true,
      body: { type: 'json', name: 'HandleClaim', schema: v.strictObject({ user: HandleUser }) },
      responses: { 200: { description: 'The handle (the same claim again answers the same)', schema: HandleBody } },
      errors: [
        'error.request.invalid',
        'error.discovery.handle_taken',
        'error.discovery.handle_fixed',
        'error.sponsored.no_identity',
        'error.auth.reauthentication_required',
      ],
      handle: async ({ c, body, principal }) => json(c, 200, unwrap(await deps.discovery.claim(principal, body.user))),
    }),
    route({
      method: 'PUT',
      path: '/v1/discovery/public',
      tag: 'discovery',
      summary: 'Publish or withdraw the anonymous record (WebFinger: handle and display name only)',
      auth: true,
      body: { type: 'json', name: 'PublicRecordUpdate', schema: v.strictObject({ published: v.boolean() }) },
      responses: {
        200: {
          description: "The record's state",
          name: 'PublicRecordState',
          schema: v.object({ handle: v.string(), published: v.boolean() }),
        },
      },
      errors: [
        'error.request.invalid',
        'error.discovery.no_handle',
        'error.sponsored.no_identity',
        'error.auth.reauthentication_required',
      ],
      handle: async ({ c, body, principal }) =>
        json(c, 200, unwrap(await deps.discovery.setPublished(principal, body.published))),
    }),
    route({
      method: 'GET',
      path: '/v1/discovery/lookup',
      tag: 'discovery',
      summary:
        "Look up one handle: its identity key and signed device directory, exactly as its owner published them. Authorization: Bearer <access token> (a local account; a handle of a listed peer is forwarded to that peer) or SvcCapability <capability token> (a listed peer, per-peer rate limit; iat at most 60 s and exp at most 3,660 s ahead of this server's clock)",
      auth: false,
      security: ['bearer', 'svcCapability'],
      callerFromBearer: true,
      // It checks its own credentials; an unreadable ledger refuses a Bearer token with 401 as elsewhere.
      statusContext: 'authenticating',
      query: v.object({ handle: v.pipe(v.string(), v.description('user@host')) }),
      responses: { 200: { description: "The handle's keys", schema: LookupBody } },
      passesOn4xx:
        "A listed peer's refusal of a forwarded lookup, passed on with the peer's own status and code (any 4xx, codes this server does not know included)",
      errors: [
        'error.request.invalid',
        'error.auth.session_invalid',
        'error.auth.unavailable',
        'error.federation.capability_invalid',
        'error.not_found',
        'error.federation.unknown_peer',
        'error.federation.rate_limited',
        'error.federation.peer_unavailable',
        'error.request.too_many',
      ],
      handle: async ({ c, query, version, caller }) => {
        const who = await looker(deps, c, caller);
        const handle = parseHandle(query.handle);
        if (handle === null) throw new HttpProblem('error.request.invalid', 'handle must be user@host.');
        if (who.kind === 'local') unwrap(await deps.discovery.admitLookup(who.principal));
        if (unwrap(deps.discovery.lookupRoute(who, handle)) === 'local')
          return json(c, 200, lookupBody(unwrap(await deps.discovery.lookup(handle))));
        // Only narrows the type: decideLookup has already refused to forward a peer's lookup.
        if (who.kind !== 'local') throw new Error('a peer lookup reached the forwarding path');
        const peer = deps.federation.peerFor(handle.host);
        if (peer === null)
          throw new HttpProblem('error.federation.unknown_peer', `${handle.host} is not a peer of this server.`);
        const subject = (await deps.discovery.handleOf(who.principal.accountId)) ?? who.principal.accountId;
        let reply: PeerReply;
        try {
          const forwarded = await deps.federation.forward(peer, handle, subject, version, who.principal.accountId);
          if (!forwarded.ok)
            deps.logger.warn('federation.peer_unavailable', { peer, error: forwarded.detail ?? forwarded.code });
          reply = unwrap(forwarded);
        } catch (err) {
          if (err instanceof PeerUnavailableError) {
            deps.logger.warn('federation.peer_unavailable', { peer, error: err.message });
            throw new HttpProblem(
              'error.federation.peer_unavailable',
              `${peer} could not be reached or did not answer in time.`,
            );
          }
          throw err;
        }
        return relay(c, reply, peer);
      },
    }),
  ];
}
