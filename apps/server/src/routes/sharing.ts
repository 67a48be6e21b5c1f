import * as v from 'valibot';
import type { DropView, Link, SponsoredRecord } from '@strongroom/core';
import { linkStatus } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { iso, isoOrNull, json, noContent, unwrap } from '../http/respond.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { Bytes, ContentHash, Timestamp, Uuid } from './schemas.js';
import { Size } from './upload-fields.js';
import { AssetBody, assetBody, assetView } from './assets.js';

const LinkId = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{22}$/, 'must be a link id (16 bytes, base64url)'));
const Key = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_-]+$/, 'must be unpadded base64url'),
  v.maxLength(5462, 'may hold at most 4 KiB'),
);
const Rfc3339 = v.pipe(
  v.string(),
  v.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/, 'must be an RFC 3339 timestamp'),
  v.check((t) => !Number.isNaN(Date.parse(t)), 'must be a real instant'),
  v.transform((t) => Date.parse(t)),
  v.description('RFC 3339 timestamp'),
);

const SponsoredBody = v.object({
  account_id: Uuid,
  sponsor_id: Uuid,
  owners: v.pipe(v.array(Uuid), v.description('Every account that may act as it, the sponsor first')),
  created_at: Timestamp,
});
named('SponsoredAccount', SponsoredBody);
const sponsoredBody = (r: SponsoredRecord) => ({
  account_id: r.accountId,
  sponsor_id: r.sponsorId,
  owners: r.owners,
  created_at: iso(r.createdAt),
});

const LinkKind = v.picklist(['share', 'upload']);
export const LinkSummary = v.object({
  link_id: LinkId,
  kind: LinkKind,
  album_id: v.nullable(Uuid),
  asset_ids: v.array(Uuid),
  max_bytes: v.nullable(Bytes),
  accepted_bytes: v.pipe(Bytes, v.description('Upload links: declared bytes of the drops opened through it')),
  status: v.picklist(['active', 'expired', 'revoked']),
  created_at: Timestamp,
  session_id: v.pipe(
    v.nullable(Uuid),
    v.description(
      'The session that created the link (null for links made before it was kept): compare with GET /v1/auth/sessions to find a link a stolen token made',
    ),
  ),
  expires_at: v.nullable(Timestamp),
  revoked_at: v.nullable(Timestamp),
});
named('Link', LinkSummary);
export const linkSummary = (l: Link, now: number) => ({
  link_id: l.id,
  kind: l.kind,
  album_id: l.albumId,
  asset_ids: l.assetIds,
  max_bytes: l.maxBytes,
  accepted_bytes: l.acceptedBytes,
  status: linkStatus(l, now),
  created_at: iso(l.createdAt),
  session_id: l.createdSessionId ?? null,
  expires_at: isoOrNull(l.expiresAt),
  revoked_at: isoOrNull(l.revokedAt),
});

const PublicLink = v.object({
  link_id: LinkId,
  kind: LinkKind,
  album_id: v.optional(v.nullable(Uuid)),
  asset_ids: v.optional(v.array(Uuid)),
  wrapped_key: v.optional(
    v.pipe(v.string(), v.description('Share links: the keys wrapped under the secret the link carries')),
  ),
  seal_key: v.optional(v.pipe(v.string(), v.description('Upload links: the link-scoped public key guests seal to'))),
  max_bytes: v.optional(v.nullable(Bytes)),
  expires_at: v.nullable(Timestamp),
});
named('PublicLink', PublicLink);
/** What anyone holding the link id sees: the wrapped key and what it covers (share), or the seal key and the album drops go to (upload). Never the owner. */
const publicLink = (l: Link) =>
  l.kind === 'share'
    ? {
        link_id: l.id,
        kind: l.kind,
        album_id: l.albumId,
        asset_ids: l.assetIds,
        wrapped_key: l.wrappedKey,
        expires_at: isoOrNull(l.expiresAt),
      }
    : {
        link_id: l.id,
        kind: l.kind,
        album_id: l.albumId,
        seal_key: l.sealKey,
        max_bytes: l.maxBytes,
        expires_at: isoOrNull(l.expiresAt),
      };

const DropBody = v.object({
  upload_id: Uuid,
  state: v.pipe(
    v.picklist(['uploading', 'ready', 'adopted', 'discarded', 'expired']),
    v.description('ready = finalized, waiting for adoption until expires_at'),
  ),
  declared_size: Bytes,
  created_at: Timestamp,
  expires_at: v.nullable(Timestamp),
});
named('Drop', DropBody);
const dropBody = (d: DropView) => ({
  upload_id: d.uploadId,
  state: d.state,
  declared_size: d.declaredSize,
  created_at: iso(d.createdAt),
  expires_at: isoOrNull(d.expiresAt),
});

const INTENT_ID =
  "The album's live upgrade intent: needed only while the album quiesces (else 409 error.upload.album_quiescing), as for upload sessions; not stored on the link";
const NewLink = v.variant('kind', [
  v.strictObject({
    kind: v.literal('share'),
    album_id: v.optional(Uuid),
    intent_id: v.optional(v.pipe(Uuid, v.description(INTENT_ID))),
    asset_ids: v.optional(v.pipe(v.array(Uuid), v.maxLength(1000))),
    wrapped_key: Key,
    expires_at: v.optional(Rfc3339),
  }),
  v.strictObject({
    kind: v.literal('upload'),
    album_id: Uuid,
    intent_id: v.optional(v.pipe(Uuid, v.description(INTENT_ID))),
    seal_key: Key,
    max_bytes: v.optional(Size),
    expires_at: v.optional(Rfc3339),
  }),
]);
// Each kind its own named shape: a generator makes one type per kind and a union of the two.
named('NewLink', NewLink);
named('NewShareLink', NewLink.options[0]);
named('NewUploadLink', NewLink.options[1]);

/** Sponsored accounts, share and upload links, and guest drops. */
export function sharingRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'POST',
      path: '/v1/sponsored',
      tag: 'sponsored',
      summary:
        'Create a sponsored account (no address, password or factor), paid for by the caller, who becomes its first owner',
      auth: true,
      body: { type: 'empty' },
      responses: { 201: { description: 'Created', name: 'SponsoredCreated', schema: v.object({ account_id: Uuid }) } },
      errors: ['error.sponsored.cannot_sponsor', 'error.auth.not_an_owner'],
      handle: async ({ c, principal }) =>
        json(c, 201, { account_id: unwrap(await deps.sponsorship.create(principal)).accountId }),
    }),
    route({
      method: 'GET',
      path: '/v1/sponsored',
      tag: 'sponsored',
      summary: 'The sponsored accounts the caller owns (as sponsor or added owner)',
      auth: true,
      responses: {
        200: {
          description: 'Oldest first',
          name: 'SponsoredList',
          schema: v.object({ sponsored: v.array(SponsoredBody) }),
        },
      },
      handle: async ({ c, principal }) =>
        json(c, 200, { sponsored: (await deps.sponsorship.list(principal)).map(sponsoredBody) }),
    }),
    route({
      method: 'POST',
      path: '/v1/sponsored/:id/owners',
      tag: 'sponsored',
      summary: 'An owner adds a registered account as another owner (idempotent)',
      auth: true,
      params: v.object({ id: Uuid }),
      body: { type: 'json', name: 'NewOwner', schema: v.strictObject({ account_id: Uuid }) },
      responses: { 200: { description: 'The sponsored account with its owners', schema: SponsoredBody } },
      errors: [
        'error.auth.not_an_owner',
        'error.not_found',
        'error.sponsored.cannot_sponsor',
        'error.request.invalid',
        'error.auth.reauthentication_required',
      ],
      handle: async ({ c, params, body, principal }) =>
        json(c, 200, sponsoredBody(unwrap(await deps.sponsorship.addOwner(principal, params.id, body.account_id)))),
    }),
    route({
      method: 'DELETE',
      path: '/v1/sponsored/:id/owners/:owner_id',
      tag: 'sponsored',
      summary: 'An owner removes an owner (itself included); the sponsor cannot be removed (409)',
      auth: true,
      params: v.object({ id: Uuid, owner_id: Uuid }),
      responses: { 204: { description: 'Removed' } },
      errors: ['error.auth.not_an_owner', 'error.not_found', 'error.conflict'],
      handle: async ({ c, params, principal }) => {
        unwrap(await deps.sponsorship.removeOwner(principal, params.id, params.owner_id));
        return noContent(c);
      },
    }),
    route({
      method: 'POST',
      path: '/v1/links',
      tag: 'links',
      summary:
        'Create a share link (wrapped keys) or a web-upload link (seal key); metadata growth, refused in GraceExpired and Suspended. A link on an album is a write into it: below its pin 426, while it quiesces 409 unless intent_id names the live intent',
      auth: true,
      body: { type: 'json', schema: NewLink },
      responses: {
        201: {
          description: 'Created; link_id is 16 random bytes, base64url',
          name: 'LinkCreated',
          schema: v.object({ link_id: LinkId, kind: LinkKind, expires_at: v.nullable(Timestamp) }),
        },
      },
      errors: [
        'error.quota.write_refused',
        'error.not_found',
        'error.request.invalid',
        'error.protocol.below_album_pin',
        'error.upload.album_quiescing',
        'error.auth.reauthentication_required',
      ],
      handle: async ({ c, body, principal, version }) => {
        const link = unwrap(
          await deps.links.create(principal, {
            kind: body.kind,
            albumId: body.album_id ?? null,
            assetIds: body.kind === 'share' ? (body.asset_ids ?? []) : [],
            wrappedKey: body.kind === 'share' ? body.wrapped_key : null,
            sealKey: body.kind === 'upload' ? body.seal_key : null,
            maxBytes: body.kind === 'upload' ? (body.max_bytes ?? null) : null,
            expiresAt: body.expires_at ?? null,
            intentId: body.intent_id ?? null,
            protocolVersion: version,
          }),
        );
        return json(c, 201, { link_id: link.id, kind: link.kind, expires_at: isoOrNull(link.expiresAt) });
      },
    }),
    route({
      method: 'GET',
      path: '/v1/links',
      tag: 'links',
      summary: "The caller's links, revoked and expired ones included, oldest first",
      auth: true,
      responses: { 200: { description: 'Links', name: 'LinkList', schema: v.object({ links: v.array(LinkSummary) }) } },
      handle: async ({ c, principal }) => {
        const now = deps.clock.now();
        return json(c, 200, { links: (await deps.links.list(principal)).map((l) => linkSummary(l, now)) });
      },
    }),
    route({
      method: 'GET',
      path: '/v1/links/:link_id',
      tag: 'links',
      summary:
        'Read a link by its id, without a token: the wrapped key and what it covers, or the seal key; 404 when revoked, expired or unknown',
      auth: false,
      params: v.object({ link_id: LinkId }),
      responses: { 200: { description: 'The link', schema: PublicLink } },
      errors: ['error.not_found'],
      handle: async ({ c, params }) => json(c, 200, publicLink(unwrap(await deps.links.read(params.link_id)))),
    }),
    route({
      method: 'DELETE',
      path: '/v1/links/:link_id',
      tag: 'links',
      summary: "Revoke one of the caller's links (always admitted, in every quota state)",
      auth: true,
      params: v.object({ link_id: LinkId }),
      responses: { 204: { description: 'Revoked' } },
      errors: ['error.not_found'],
      handle: async ({ c, params, principal }) => {
        unwrap(await deps.links.revoke(principal, params.link_id));
        return noContent(c);
      },
    }),
    route({
      method: 'POST',
      path: '/v1/links/:link_id/drops',
      tag: 'links',
      summary:
        "A guest (no token) opens a drop through an upload link: charged to the link owner now, within max_bytes and the owner's hard limit; upload_token (send it as `Authorization: Upload <token>`) admits PUT /upload/{id} and its finalize only. The drop lands in the link's album: below its pin 426; while the album quiesces for an upgrade 409 error.upload.album_quiescing with live_intent_id (a guest names no intent, so no drop opens until the ceremony ends); an open drop counts in the album's in_flight and toward the owner's payer's open sessions, of which drops may hold only half of SVC_MAX_OPEN_UPLOADS (past it 429)",
      auth: false,
      params: v.object({ link_id: LinkId }),
      body: {
        type: 'json',
        name: 'NewDrop',
        schema: v.strictObject({ declared_size: Size, content_hash: v.optional(ContentHash) }),
      },
      responses: {
        201: {
          description: 'Opened',
          name: 'DropOpened',
          schema: v.object({
            upload_id: Uuid,
            upload_token: v.string(),
            expires_at: Timestamp,
            multipart: v.pipe(
              v.nullable(v.object({ part_size: Bytes, part_count: v.pipe(v.number(), v.integer(), v.minValue(1)) })),
              v.description(
                'On object storage with SVC_S3_DIRECT on, a drop above SVC_S3_PART_BYTES goes straight to the store in parts, as POST /upload answers (POST /upload/{id}/parts with the upload token); else null',
              ),
            ),
          }),
        },
      },
      errors: [
        'error.quota.exceeded',
        'error.quota.write_refused',
        'error.not_found',
        'error.request.invalid',
        'error.request.too_many',
        'error.protocol.below_album_pin',
        'error.upload.album_quiescing',
      ],
      handle: async ({ c, params, body, version }) => {
        const d = unwrap(
          await deps.links.openDrop(params.link_id, {
            declaredSize: body.declared_size,
            contentHash: body.content_hash ?? null,
            protocolVersion: version,
          }),
        );
        const parts = deps.uploads.multipartOffer(body.declared_size);
        return json(c, 201, {
          upload_id: d.uploadId,
          upload_token: d.uploadToken,
          expires_at: iso(d.expiresAt),
          multipart: parts === null ? null : { part_size: parts.partSize, part_count: parts.partCount },
        });
      },
    }),
    route({
      method: 'GET',
      path: '/v1/links/:link_id/drops',
      tag: 'links',
      summary: "The drops guests opened through one of the caller's upload links",
      auth: true,
      params: v.object({ link_id: LinkId }),
      responses: {
        200: { description: 'Oldest first', name: 'DropList', schema: v.object({ drops: v.array(DropBody) }) },
      },
      errors: ['error.not_found'],
      handle: async ({ c, params, principal }) =>
        json(c, 200, { drops: unwrap(await deps.links.drops(principal, params.link_id)).map(dropBody) }),
    }),
    route({
      method: 'POST',
      path: '/v1/drops/:id/adopt',
      tag: 'links',
      summary:
        "Adopt a finalized drop: it becomes a live asset of the link owner (already charged; only its later metadata and provenance blobs add to it). It lands in its link's album, so it is a write to that album: below the album's pin 426 error.protocol.below_album_pin; while the album quiesces for an upgrade 409 error.upload.album_quiescing unless intent_id names the live intent",
      auth: true,
      params: v.object({ id: Uuid }),
      query: v.object({
        intent_id: v.optional(
          v.pipe(Uuid, v.description("The album's live upgrade intent, to adopt while it quiesces")),
        ),
      }),
      body: { type: 'empty' },
      responses: { 200: { description: 'The asset', schema: AssetBody } },
      errors: ['error.not_found', 'error.conflict', 'error.protocol.below_album_pin', 'error.upload.album_quiescing'],
      handle: async ({ c, params, query, principal, version }) =>
        json(
          c,
          200,
          assetBody(
            await assetView(
              deps,
              principal,
              unwrap(
                await deps.links.adopt(principal, params.id, {
                  intentId: query.intent_id ?? null,
                  protocolVersion: version,
                }),
              ),
            ),
          ),
        ),
    }),
    route({
      method: 'DELETE',
      path: '/v1/drops/:id',
      tag: 'links',
      summary:
        'Discard a drop: an open upload is cancelled (its reservation released now); a finalized drop is freed at the next GC sweep',
      auth: true,
      params: v.object({ id: Uuid }),
      responses: { 204: { description: 'Discarded' } },
      errors: ['error.not_found'],
      handle: async ({ c, params, principal }) => {
        unwrap(await deps.links.discard(principal, params.id));
        return noContent(c);
      },
    }),
  ];
}
