import * as v from 'valibot';
import {
  MAX_PART_URLS,
  type PartsView,
  type SignedDirectPut,
  type SignedPart,
  type UploadView,
} from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { bodyChunks, octetStream } from '../http/request.js';
import { iso, json, unwrap } from '../http/respond.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { Bytes, Count, Timestamp, Uuid } from './schemas.js';
import { Hash, IdParam, Kind, Size, UploadState } from './upload-fields.js';

const DirectPut = v.pipe(
  named(
    'DirectPut',
    v.object({
      url: v.pipe(v.string(), v.description("Presigned URL of this session's staging object in the bucket")),
      method: v.picklist(['PUT']),
      headers: v.pipe(
        v.record(v.string(), v.string()),
        v.description(
          'Send exactly these (they are signed): content-length (= declared_size) and, when content_hash was announced, x-amz-checksum-sha256',
        ),
      ),
      expires_at: v.pipe(
        Timestamp,
        v.description(
          "The URL is refused after this: at most SVC_S3_PUT_URL_S (default 900 s) from now, and never past the session's expiry. A PUT begun in time may finish later; ask POST /upload/{id}/direct-put for a fresh URL",
        ),
      ),
    }),
  ),
  v.description(
    'Object storage with SVC_S3_DIRECT on: send the ciphertext straight to the store with this request instead of PUT /upload/{id} (which keeps working), then finalize as usual',
  ),
);
const directBody = (d: SignedDirectPut) => ({
  url: d.url,
  method: 'PUT' as const,
  headers: d.headers,
  expires_at: iso(d.expiresAt),
});
const MultipartOffer = v.pipe(
  v.object({
    part_size: v.pipe(
      Bytes,
      v.description(
        'Bytes in every part but the last (SVC_S3_PART_BYTES, or more when 10,000 parts would not hold the upload)',
      ),
    ),
    part_count: v.pipe(
      Count,
      v.description('How many parts: the last holds declared_size - (part_count - 1) * part_size bytes'),
    ),
  }),
  v.description(
    'Object storage with SVC_S3_DIRECT on, declared_size above SVC_S3_PART_BYTES: send the ciphertext straight to the store in parts (S3 multipart): ask their URLs with POST /upload/{id}/parts, list what arrived with GET /upload/{id}/parts, then finalize as usual. direct_put is then null',
  ),
);
const Created = v.object({
  upload_id: Uuid,
  state: UploadState,
  expires_at: Timestamp,
  direct_put: v.nullable(DirectPut),
  multipart: v.nullable(MultipartOffer),
});
const PartNumber = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000));
const PartUrl = v.object({
  part_number: PartNumber,
  url: v.pipe(v.string(), v.description('Presigned URL of this part of this upload in the bucket')),
  method: v.picklist(['PUT']),
  headers: v.pipe(
    v.record(v.string(), v.string()),
    v.description(
      "Send exactly these (they are signed): content-length (the part's planned length) and x-amz-checksum-sha256 (base64 of the part's announced SHA-256)",
    ),
  ),
  expires_at: v.pipe(
    Timestamp,
    v.description("At most SVC_S3_PUT_URL_S from now, never past the session's expiry; ask again for a fresh URL"),
  ),
});
named('PartUrl', PartUrl);
const partUrlBody = (p: SignedPart) => ({
  part_number: p.partNumber,
  url: p.url,
  method: 'PUT' as const,
  headers: p.headers,
  expires_at: iso(p.expiresAt),
});
const PartsBody = v.object({
  part_size: Bytes,
  part_count: Count,
  stored: v.pipe(
    v.array(v.object({ part_number: PartNumber, size: Bytes })),
    v.description('The parts the store holds whole, at their planned length, ascending'),
  ),
  missing: v.pipe(v.array(PartNumber), v.description('The part numbers still to send, ascending')),
  expires_at: v.pipe(
    Timestamp,
    v.description("The session's expiry: the parts stay until then (then the staging sweep aborts them)"),
  ),
});
named('UploadParts', PartsBody);
const partsBody = (p: PartsView) => ({
  part_size: p.partSize,
  part_count: p.partCount,
  stored: p.stored.map((x) => ({ part_number: x.partNumber, size: x.size })),
  missing: p.missing,
  expires_at: iso(p.expiresAt),
});
named('UploadCreated', Created);
const UploadBody = v.object({
  upload_id: Uuid,
  state: UploadState,
  expires_at: Timestamp,
  kind: Kind,
  declared_size: Bytes,
  asset_id: v.nullable(Uuid),
});
named('Upload', UploadBody);
const uploadBody = (u: UploadView) => ({
  upload_id: u.uploadId,
  state: u.state,
  expires_at: iso(u.expiresAt),
  kind: u.kind,
  declared_size: u.declaredSize,
  asset_id: u.assetId,
});

/** The upload-session lifecycle: create (the one hard quota check), send the bytes, finalize, cancel. */
export function uploadRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'POST',
      path: '/upload',
      tag: 'quota',
      summary:
        "Open an upload session of any kind: the device and album are checked, then, atomically, the payer's open sessions against SVC_MAX_OPEN_UPLOADS and used + declared_size against the hard limit; the declared size is reserved. A provenance or metadata session opened within SVC_QUOTA_FOLLOW_UP_S of the caller's own trash, restore, purge or trash-empty is that change's follow-up: admitted past the hard limit (HardExceeded, GraceExpired; not Suspended) while used + declared_size stays within the hard limit plus SVC_QUOTA_FOLLOW_UP_OVERDRAFT_BYTES. The answer never depends on whether content_hash is stored: a merge is decided at finalize, once the bytes hash to it. kind \"federated\" caches a blob received from source_peer (one of SVC_FEDERATION_PEERS) for the caller: charged to the caller's payer, deduplicated by content_hash at finalize, and also within the per-peer budget (SVC_FEDERATED_BUDGET_PCT of the hard limit)",
      auth: true,
      body: {
        type: 'json',
        name: 'NewUpload',
        schema: v.strictObject({
          declared_size: Size,
          kind: v.picklist(['original', 'derivative', 'metadata', 'provenance', 'federated']),
          content_hash: v.optional(Hash),
          album_id: v.optional(Uuid),
          intent_id: v.optional(Uuid),
          source_peer: v.optional(
            v.pipe(
              v.string(),
              v.maxLength(2048),
              v.url(),
              v.regex(/^https?:\/\//i, 'must be an http(s) URL'),
              v.description(
                'kind "federated" only (and required there): the peer server the blob came from, one of SVC_FEDERATION_PEERS compared as origins (scheme and host case, a default port and a trailing slash make no other peer); any other http(s) URL is 403 error.federation.unknown_peer',
              ),
            ),
          ),
          device_id: v.pipe(v.string(), v.minLength(1)),
        }),
      },
      responses: {
        201: {
          description: 'Reserved (Pending); never Merged at creation, whatever content_hash names',
          schema: Created,
        },
      },
      errors: [
        'error.quota.exceeded',
        'error.quota.write_refused',
        'error.quota.federated_budget',
        'error.federation.unknown_peer',
        'error.request.too_many',
        'error.device.unknown',
        'error.upload.album_quiescing',
        'error.protocol.below_album_pin',
        'error.request.invalid',
        'error.not_found',
      ],
      statusContext: 'federatedFill',
      handle: async ({ c, body, principal, version }) => {
        const u = unwrap(
          await deps.uploads.create(principal, {
            declaredSize: body.declared_size,
            kind: body.kind,
            contentHash: body.content_hash ?? null,
            sourcePeer: body.source_peer ?? null,
            albumId: body.album_id ?? null,
            intentId: body.intent_id ?? null,
            deviceId: body.device_id,
            protocolVersion: version,
          }),
        );
        return json(c, 201, {
          upload_id: u.uploadId,
          state: u.state,
          expires_at: iso(u.expiresAt),
          direct_put: u.directPut === null ? null : directBody(u.directPut),
          multipart:
            u.multipart === null ? null : { part_size: u.multipart.partSize, part_count: u.multipart.partCount },
        });
      },
    }),
    route({
      method: 'GET',
      path: '/upload/:id',
      tag: 'quota',
      summary: "One of the caller's upload sessions (an open session past its expiry reads Expired)",
      auth: true,
      params: IdParam,
      responses: { 200: { description: 'The session', schema: UploadBody } },
      handle: async ({ c, params, principal }) =>
        json(c, 200, uploadBody(unwrap(await deps.uploads.get(principal, params.id)))),
    }),
    route({
      method: 'PUT',
      path: '/upload/:id',
      tag: 'quota',
      summary:
        'Send the ciphertext (application/octet-stream, at most declared_size bytes); sending again replaces it. A guest sends its drop with `Authorization: Upload <upload_token>`. Bytes of a session opened in an album (album_id, or a drop through a link on it) are a write to that album: below its pin 426 error.protocol.below_album_pin, whatever version the session was opened with; quiescence is not judged again (the session counts in flight and may finish)',
      auth: true,
      uploadToken: true,
      params: IdParam,
      body: { type: 'bytes', description: 'The ciphertext, application/octet-stream' },
      responses: { 200: { description: 'Received: WaitingForProcessing', schema: UploadBody } },
      errors: [
        'error.upload.too_large',
        'error.conflict',
        'error.not_found',
        'error.request.unsupported_media_type',
        'error.protocol.below_album_pin',
      ],
      handle: async ({ c, params, principal, version }) => {
        octetStream(c);
        return json(
          c,
          200,
          uploadBody(unwrap(await deps.uploads.put(principal, params.id, bodyChunks(c), { protocolVersion: version }))),
        );
      },
    }),
    route({
      method: 'POST',
      path: '/upload/:id/direct-put',
      tag: 'quota',
      summary:
        'A fresh presigned PUT URL for a session still waiting for bytes (Pending), as POST /upload answered: the same signed length and checksum, living at most SVC_S3_PUT_URL_S and never past the session. Earlier URLs stay valid until their own expiry; what they send is checked at finalize like any direct upload. Whoever may PUT /upload/{id} may ask (a guest with `Authorization: Upload <upload_token>`). 409 error.conflict once the session is not Pending (received, finalized, cancelled, expired), for a session that goes in parts (declared_size above SVC_S3_PART_BYTES: POST /upload/{id}/parts), and on a server whose blob store takes no direct uploads (the filesystem store, or SVC_S3_DIRECT=false)',
      auth: true,
      uploadToken: true,
      params: IdParam,
      responses: { 200: { description: 'A fresh URL', schema: DirectPut } },
      errors: ['error.conflict', 'error.not_found'],
      handle: async ({ c, params, principal }) =>
        json(c, 200, directBody(unwrap(await deps.uploads.directPut(principal, params.id)))),
    }),
    route({
      method: 'GET',
      path: '/upload/:id/parts',
      tag: 'quota',
      summary:
        'What a direct upload in parts holds now (S3 ListParts), so a resumed upload sends only the rest: the parts stored whole at their planned length, and the part numbers still missing. Parts stay while the session is open (SVC_UPLOAD_TTL_S); after it is cancelled, expires or is finalized the staging sweep aborts what is left. Whoever may PUT /upload/{id} may ask (a guest with `Authorization: Upload <upload_token>`). 409 error.conflict for a session that does not go in parts (multipart null at creation) or no longer waits for bytes',
      auth: true,
      uploadToken: true,
      params: IdParam,
      responses: { 200: { description: 'The parts held and missing', schema: PartsBody } },
      errors: ['error.conflict', 'error.not_found'],
      handle: async ({ c, params, principal }) =>
        json(c, 200, partsBody(unwrap(await deps.uploads.parts(principal, params.id)))),
    }),
    route({
      method: 'POST',
      path: '/upload/:id/parts',
      tag: 'quota',
      summary: `Presigned PUTs for parts of a direct upload in parts (1 to ${MAX_PART_URLS} per request), each signed with the part's planned length and the SHA-256 announced for it here, so the store refuses another length, other bytes, another part number or another upload. The first request opens the store's multipart upload. Sending a part again replaces it. Send every part, then POST /upload/{id}/finalize: it completes the parts into one object only when every part is there whole (else 409 error.conflict naming missing_parts, nothing charged, the parts kept), then checks its size and SHA-256 like any direct upload before anything is charged. For whoever may PUT /upload/{id}; 409 error.conflict for a session that does not go in parts or no longer waits for bytes`,
      auth: true,
      uploadToken: true,
      params: IdParam,
      body: {
        type: 'json',
        name: 'PartUrlsRequest',
        schema: v.strictObject({
          parts: v.pipe(
            v.array(
              v.strictObject({
                part_number: PartNumber,
                sha256: v.pipe(
                  Hash,
                  v.description("Hex SHA-256 of this part's bytes (signed: the store refuses other bytes)"),
                ),
              }),
            ),
            v.minLength(1),
            v.maxLength(MAX_PART_URLS),
          ),
        }),
      },
      responses: {
        200: {
          description: 'One signed PUT per part asked, in the order asked',
          name: 'PartUrls',
          schema: v.object({ parts: v.array(PartUrl) }),
        },
      },
      errors: ['error.conflict', 'error.not_found', 'error.request.invalid'],
      handle: async ({ c, body, params, principal }) => {
        const signed = unwrap(
          await deps.uploads.partUrls(
            principal,
            params.id,
            body.parts.map((p) => ({ partNumber: p.part_number, sha256: p.sha256 })),
          ),
        );
        return json(c, 200, { parts: signed.map(partUrlBody) });
      },
    }),
    route({
      method: 'POST',
      path: '/upload/:id/finalize',
      tag: 'quota',
      summary:
        "Commit the bytes under content_hash (they must hash to it, and to the content_hash announced at creation): parts sent through POST /upload/{id}/parts are first completed into one object, only when every part is there whole (else 409 error.conflict with missing_parts, nothing charged, the parts kept for the client to finish); bytes sent to direct_put or in parts are checked first (size within declared_size, SHA-256 equal to content_hash) and, on any mismatch, deleted and nothing charged; the reservation becomes a charge of the real size, or a merge when those bytes are stored already (nothing charged); no quota check here. Idempotent: finalizing a finalized session with the same hash answers it again. A session opened in an album (album_id, or a drop through a link on it) lands in that album: below its pin 426 error.protocol.below_album_pin, judged on this request's version whatever version the session was opened with (quiescence is not judged again: the session counts in flight and may finish). A derivative, metadata or provenance blob attached to an asset of an album lands in that album: opened without album_id, it is checked here against the album's pin (426 error.protocol.below_album_pin) and quiescence (409 error.upload.album_quiescing unless manifest.intent_id names the live intent); opened naming another album, 409 error.conflict. A guest finalizes its drop with `Authorization: Upload <upload_token>`; a federated blob becomes the caller's cache entry",
      auth: true,
      uploadToken: true,
      params: IdParam,
      body: {
        type: 'json',
        name: 'FinalizeRequest',
        schema: v.strictObject({
          content_hash: Hash,
          manifest: v.optional(
            named(
              'FinalizeManifest',
              v.strictObject({
                asset_id: v.optional(
                  v.pipe(
                    Uuid,
                    v.description(
                      'The asset a derivative, metadata or provenance blob belongs to (required for those kinds)',
                    ),
                  ),
                ),
                intent_id: v.optional(
                  v.pipe(Uuid, v.description("Must be the album's live upgrade intent, else 409 error.conflict")),
                ),
              }),
            ),
          ),
        }),
      },
      responses: {
        200: {
          description:
            'Completed (charged) or Merged (already stored, nothing charged); asset_id names the asset; receipt attests the stored blob',
          name: 'FinalizedUpload',
          schema: v.object({
            ...UploadBody.entries,
            receipt: v.pipe(
              v.string(),
              v.description(
                'Storage receipt: compact JWS (EdDSA, typ svc-receipt+jwt, kid of an attestation key) with claims iss, sub, upload_id, content_hash, size, charged_to, iat; verify against /.well-known/svc/attestation-keys',
              ),
            ),
          }),
        },
      },
      errors: [
        'error.conflict',
        'error.not_found',
        'error.request.invalid',
        'error.upload.too_large',
        'error.protocol.below_album_pin',
        'error.upload.album_quiescing',
      ],
      handle: async ({ c, body, params, principal, version }) => {
        const manifest = body.manifest
          ? { assetId: body.manifest.asset_id ?? null, intentId: body.manifest.intent_id ?? null }
          : null;
        const done = uploadBody(
          unwrap(
            await deps.uploads.finalize(principal, params.id, {
              protocolVersion: version,
              contentHash: body.content_hash,
              manifest,
            }),
          ),
        );
        // Signed after the finalize committed, from the ledger's record of the blob (attestation).
        const receipt = await deps.attestation.receipt({
          uploaderId: principal.accountId,
          uploadId: done.upload_id,
          contentHash: body.content_hash,
        });
        return json(c, 200, { ...done, receipt });
      },
    }),
    route({
      method: 'DELETE',
      path: '/upload/:id',
      tag: 'quota',
      summary: 'Cancel an open upload session and release its reservation',
      auth: true,
      params: IdParam,
      responses: { 200: { description: 'Cancelled', schema: UploadBody } },
      errors: ['error.conflict', 'error.not_found'],
      handle: async ({ c, params, principal }) =>
        json(c, 200, uploadBody(unwrap(await deps.uploads.cancel(principal, params.id)))),
    }),
  ];
}
