import * as v from 'valibot';
import type { ErrorCode, Result, UploadView } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { bodyChunks, octetStream } from '../http/request.js';
import { iso, json, unwrap } from '../http/respond.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { Timestamp, Uuid } from './schemas.js';
import { Hash, IdParam, Kind, Size, UploadState } from './upload-fields.js';

const Created = v.object({ upload_id: Uuid, state: UploadState, expires_at: Timestamp });
const UploadBody = v.object({ upload_id: Uuid, state: UploadState, expires_at: Timestamp, kind: Kind, declared_size: v.number(), asset_id: v.nullable(Uuid) });
const uploadBody = (u: UploadView) => ({ upload_id: u.uploadId, state: u.state, expires_at: iso(u.expiresAt), kind: u.kind, declared_size: u.declaredSize, asset_id: u.assetId });


/**
 * Federated cache fills share the /upload/{id} paths with upload sessions: an id that names no
 * upload session of the caller is looked up among them (only then, so uploads pay nothing for it).
 */
async function federatedIfMissing<T, C extends ErrorCode>(first: Result<T, C>, fallback: () => Promise<Result<T, ErrorCode>>): Promise<Result<T, ErrorCode>> {
  if (first.ok || first.code !== 'error.not_found') return first;
  return fallback();
}

/** The upload-session lifecycle: create (the one hard quota check), send the bytes, finalize, cancel. */
export function uploadRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'POST',
      path: '/upload',
      tag: 'quota',
      summary:
        'Open an upload session: the device and album are checked, then used + declared_size against the hard limit, atomically. kind "federated" caches a blob received from source_peer for the caller: charged to the caller\'s payer, deduplicated by content_hash, within the per-peer budget (SVC_FEDERATED_BUDGET_PCT of the hard limit), atomically',
      auth: true,
      body: {
        type: 'json',
        schema: v.strictObject({
          declared_size: Size,
          kind: v.picklist(['original', 'derivative', 'metadata', 'provenance', 'federated']),
          content_hash: v.optional(Hash),
          album_id: v.optional(Uuid),
          intent_id: v.optional(Uuid),
          source_peer: v.optional(v.pipe(v.string(), v.maxLength(2048), v.url(), v.regex(/^https?:\/\//, 'must be an http(s) base URL'), v.description('kind "federated" only (and required there): the peer server the blob came from'))),
          device_id: v.pipe(v.string(), v.minLength(1)),
        }),
      },
      responses: { 201: { description: 'Reserved (Pending), or Merged when content_hash is already stored (nothing charged)', schema: Created } },
      errors: ['error.quota.exceeded', 'error.quota.write_refused', 'error.quota.federated_budget', 'error.device.unknown', 'error.upload.album_quiescing', 'error.protocol.below_album_pin', 'error.request.invalid'],
      handle: async ({ c, body, principal, version }) => {
        if (body.kind === 'federated') {
          if (body.source_peer === undefined || body.content_hash === undefined) throw new HttpProblem('error.request.invalid', 'A federated blob needs source_peer and content_hash.');
          if (body.album_id !== undefined || body.intent_id !== undefined) throw new HttpProblem('error.request.invalid', 'A federated blob takes no album_id or intent_id.');
          const f = unwrap(
            await deps.federatedCache.open(principal, { peer: body.source_peer, declaredSize: body.declared_size, contentHash: body.content_hash, deviceId: body.device_id, protocolVersion: version }),
          );
          return json(c, 201, { upload_id: f.uploadId, state: f.state, expires_at: iso(f.expiresAt) });
        }
        if (body.source_peer !== undefined) throw new HttpProblem('error.request.invalid', 'source_peer belongs to kind "federated" only.');
        const u = unwrap(
          await deps.uploads.create(principal, {
            declaredSize: body.declared_size,
            kind: body.kind,
            contentHash: body.content_hash ?? null,
            albumId: body.album_id ?? null,
            intentId: body.intent_id ?? null,
            deviceId: body.device_id,
            protocolVersion: version,
          }),
        );
        return json(c, 201, { upload_id: u.uploadId, state: u.state, expires_at: iso(u.expiresAt) });
      },
    }),
    route({
      method: 'GET',
      path: '/upload/:id',
      tag: 'quota',
      summary: 'One of the caller\'s upload sessions (an open session past its expiry reads Expired)',
      auth: true,
      params: IdParam,
      responses: { 200: { description: 'The session', schema: UploadBody } },
      handle: async ({ c, params, principal }) => json(c, 200, uploadBody(unwrap(await federatedIfMissing(await deps.uploads.get(principal, params.id), () => deps.federatedCache.get(principal, params.id))))),
    }),
    route({
      method: 'PUT',
      path: '/upload/:id',
      tag: 'quota',
      summary: 'Send the ciphertext (application/octet-stream, at most declared_size bytes); sending again replaces it. A guest sends its drop with `Authorization: Upload <upload_token>`',
      auth: true,
      uploadToken: true,
      params: IdParam,
      body: { type: 'bytes', description: 'The ciphertext, application/octet-stream' },
      responses: { 200: { description: 'Received: WaitingForProcessing', schema: UploadBody } },
      errors: ['error.upload.too_large', 'error.conflict', 'error.not_found', 'error.request.unsupported_media_type'],
      handle: async ({ c, params, principal }) => {
        octetStream(c);
        const r = await federatedIfMissing(await deps.uploads.put(principal, params.id, bodyChunks(c)), () => deps.federatedCache.put(principal, params.id, bodyChunks(c)));
        return json(c, 200, uploadBody(unwrap(r)));
      },
    }),
    route({
      method: 'POST',
      path: '/upload/:id/finalize',
      tag: 'quota',
      summary: 'Commit the bytes under content_hash: the reservation becomes a charge of the real size, or a merge (no quota check here). A guest finalizes its drop with `Authorization: Upload <upload_token>`; a federated blob is charged to the cache here, within its peer budget',
      auth: true,
      uploadToken: true,
      params: IdParam,
      body: {
        type: 'json',
        schema: v.strictObject({
          content_hash: Hash,
          manifest: v.optional(
            v.strictObject({
              asset_id: v.optional(v.pipe(Uuid, v.description('The asset a derivative, metadata or provenance blob belongs to (required for those kinds)'))),
              intent_id: v.optional(v.pipe(Uuid, v.description('Must be the album\'s live upgrade intent, else 409 error.conflict'))),
            }),
          ),
        }),
      },
      responses: {
        200: {
          description: 'Completed (charged) or Merged (already stored, nothing charged); asset_id names the asset; receipt attests the stored blob',
          schema: v.object({
            ...UploadBody.entries,
            receipt: v.pipe(
              v.string(),
              v.description('Storage receipt: compact JWS (EdDSA, typ svc-receipt+jwt, kid of an attestation key) with claims iss, sub, upload_id, content_hash, size, charged_to, iat; verify against /.well-known/svc/attestation-keys'),
            ),
          }),
        },
      },
      errors: ['error.conflict', 'error.not_found', 'error.request.invalid', 'error.quota.federated_budget'],
      handle: async ({ c, body, params, principal }) => {
        const manifest = body.manifest ? { assetId: body.manifest.asset_id ?? null, intentId: body.manifest.intent_id ?? null } : null;
        const r = await federatedIfMissing(await deps.uploads.finalize(principal, params.id, { contentHash: body.content_hash, manifest }), () =>
          deps.federatedCache.finalize(principal, params.id, body.content_hash),
        );
        const done = uploadBody(unwrap(r));
        // Signed after the finalize committed, from the ledger's record of the blob (attestation).
        const receipt = await deps.attestation.receipt({ uploaderId: principal.accountId, uploadId: done.upload_id, contentHash: body.content_hash });
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
      handle: async ({ c, params, principal }) => json(c, 200, uploadBody(unwrap(await federatedIfMissing(await deps.uploads.cancel(principal, params.id), () => deps.federatedCache.cancel(principal, params.id))))),
    }),
  ];
}
