import * as v from 'valibot';
import type { AssetRecord, Principal, SyncAsset } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { JSON_LIMIT, octetStream, readLimited } from '../http/request.js';
import { iso, isoOrNull, json, noContent, unwrap } from '../http/respond.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { Bytes, Count, Timestamp, Uuid } from './schemas.js';
import { Hash, IdParam, Kind } from './upload-fields.js';

/** An asset on the wire (also the answer to adopting a drop, a sync change's record and a share link's listing). */
export const AssetBody = v.object({
  asset_id: Uuid,
  owner_id: Uuid,
  upload_user_id: Uuid,
  album_id: v.pipe(v.nullable(Uuid), v.description('The album its original was uploaded into (null: none)')),
  state: v.picklist(['live', 'trashed']),
  created_at: Timestamp,
  updated_at: v.pipe(
    Timestamp,
    v.description('Its latest change: created, trashed, restored, a blob added or its metadata replaced'),
  ),
  trashed_at: v.nullable(Timestamp),
  blobs: v.array(
    named(
      'AssetBlob',
      v.object({
        role: v.pipe(Kind, v.description('What the blob is to the asset')),
        kind: v.pipe(Kind, v.description('The same as role (the name earlier builds used)')),
        content_hash: Hash,
        size: Bytes,
      }),
    ),
  ),
});
named('Asset', AssetBody);
export const assetBody = (a: SyncAsset) => ({
  asset_id: a.id,
  owner_id: a.ownerId,
  upload_user_id: a.uploaderId,
  album_id: a.albumId,
  state: a.state,
  created_at: iso(a.createdAt),
  updated_at: iso(a.updatedAt),
  trashed_at: isoOrNull(a.trashedAt),
  blobs: a.blobs.map((b) => ({ role: b.kind, kind: b.kind, content_hash: b.contentHash, size: b.size })),
});

/**
 * The asset a write answered, as GET answers it now (with its album and last change). Should a
 * racing purge have taken it since, the write's own record stands, its album unknown.
 */
export async function assetView(
  deps: AppDeps,
  principal: Pick<Principal, 'accountId' | 'guestUploadId'>,
  a: AssetRecord,
): Promise<SyncAsset> {
  const now = await deps.sync.asset(principal, a.id);
  return now.ok ? now.value : { ...a, albumId: null, updatedAt: a.createdAt };
}

/** A write to an asset of an album is a write to that album: this names the live intent while it quiesces. */
const IntentQuery = v.object({
  intent_id: v.optional(
    v.pipe(
      Uuid,
      v.description(
        "The live upgrade intent of the asset's album: needed only while that album quiesces (else 409 error.upload.album_quiescing), as for upload sessions",
      ),
    ),
  ),
});
const ALBUM_GUARD =
  ' An asset of an album (the one its original was uploaded into) is written in that album: below its pin 426 error.protocol.below_album_pin; while it quiesces for an upgrade 409 error.upload.album_quiescing unless intent_id names the live intent';
/** What a trash, restore or purge admits afterwards (core's admitWrite); docs/api.md has the whole rule. */
const FOLLOW_UPS =
  " For SVC_QUOTA_FOLLOW_UP_S afterwards the owner's provenance and metadata uploads and metadata edits are admitted as its follow-ups, past the hard limit and in GraceExpired, up to the hard limit plus SVC_QUOTA_FOLLOW_UP_OVERDRAFT_BYTES.";
const guarded = (query: { intent_id?: string | undefined }, version: string) => ({
  protocolVersion: version,
  intentId: query.intent_id ?? null,
});

/** The minimal asset lifecycle quota needs: read, trash, restore, purge, empty the trash, replace metadata. */
export function assetRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'GET',
      path: '/v1/assets/:id',
      tag: 'assets',
      summary: 'An asset and the blobs it references (owner_id and upload_user_id may differ)',
      auth: true,
      params: IdParam,
      responses: { 200: { description: 'The asset', schema: AssetBody } },
      handle: async ({ c, params, principal }) =>
        json(c, 200, assetBody(unwrap(await deps.sync.asset(principal, params.id)))),
    }),
    route({
      method: 'POST',
      path: '/v1/assets/:id/trash',
      tag: 'assets',
      summary: `Move a live asset to the trash (it stays charged at full size until hard purge).${FOLLOW_UPS}${ALBUM_GUARD}`,
      auth: true,
      params: IdParam,
      query: IntentQuery,
      body: { type: 'empty' },
      responses: { 200: { description: 'Trashed', schema: AssetBody } },
      errors: ['error.conflict', 'error.not_found', 'error.protocol.below_album_pin', 'error.upload.album_quiescing'],
      handle: async ({ c, params, query, principal, version }) =>
        json(
          c,
          200,
          assetBody(
            await assetView(
              deps,
              principal,
              unwrap(await deps.assets.trash(principal, params.id, guarded(query, version))),
            ),
          ),
        ),
    }),
    route({
      method: 'POST',
      path: '/v1/assets/:id/restore',
      tag: 'assets',
      summary: `Restore a trashed asset (always admitted by quota, in every quota state).${FOLLOW_UPS}${ALBUM_GUARD}`,
      auth: true,
      params: IdParam,
      query: IntentQuery,
      body: { type: 'empty' },
      responses: { 200: { description: 'Live again', schema: AssetBody } },
      errors: ['error.conflict', 'error.not_found', 'error.protocol.below_album_pin', 'error.upload.album_quiescing'],
      handle: async ({ c, params, query, principal, version }) =>
        json(
          c,
          200,
          assetBody(
            await assetView(
              deps,
              principal,
              unwrap(await deps.assets.restore(principal, params.id, guarded(query, version))),
            ),
          ),
        ),
    }),
    route({
      method: 'DELETE',
      path: '/v1/assets/:id',
      tag: 'assets',
      summary: `Hard-purge a trashed asset: its references drop now; the bytes are credited by the next GC sweep.${FOLLOW_UPS}${ALBUM_GUARD}`,
      auth: true,
      params: IdParam,
      query: IntentQuery,
      responses: { 204: { description: 'Purged' } },
      errors: ['error.conflict', 'error.not_found', 'error.protocol.below_album_pin', 'error.upload.album_quiescing'],
      handle: async ({ c, params, query, principal, version }) => {
        unwrap(await deps.assets.purge(principal, params.id, guarded(query, version)));
        return noContent(c);
      },
    }),
    route({
      method: 'POST',
      path: '/v1/trash/empty',
      tag: 'assets',
      summary:
        "Hard-purge every asset in the caller's trash (credited by the next GC sweep). Purging an asset of an album is a write to that album, checked as " +
        'its single purge is: if any album of the trashed assets refuses (below its pin 426 error.protocol.below_album_pin; while it quiesces for an upgrade ' +
        '409 error.upload.album_quiescing unless intent_id names the live intent), the whole request is refused with that answer, its album named in ' +
        'album_id, and nothing is purged',
      auth: true,
      query: IntentQuery,
      body: { type: 'empty' },
      responses: {
        200: { description: 'How many were purged', name: 'TrashEmptied', schema: v.object({ purged: Count }) },
      },
      errors: ['error.protocol.below_album_pin', 'error.upload.album_quiescing'],
      handle: async ({ c, query, principal, version }) =>
        json(c, 200, { purged: unwrap(await deps.assets.emptyTrash(principal, guarded(query, version))) }),
    }),
    route({
      method: 'PUT',
      path: '/v1/assets/:id/metadata',
      tag: 'assets',
      summary: `Replace the asset's encrypted metadata blob (a caption or tag edit, at most 64 KiB); growth is refused in GraceExpired and Suspended, except, in GraceExpired, as a follow-up of the caller's own trash, restore, purge or trash-empty within SVC_QUOTA_FOLLOW_UP_S, up to the hard limit plus SVC_QUOTA_FOLLOW_UP_OVERDRAFT_BYTES.${ALBUM_GUARD}`,
      auth: true,
      params: IdParam,
      query: IntentQuery,
      body: { type: 'bytes', description: 'The new metadata ciphertext, application/octet-stream' },
      responses: { 200: { description: 'Replaced; the old blob is credited by the next sweep', schema: AssetBody } },
      errors: [
        'error.quota.write_refused',
        'error.conflict',
        'error.not_found',
        'error.request.too_large',
        'error.protocol.below_album_pin',
        'error.upload.album_quiescing',
      ],
      handle: async ({ c, params, query, principal, version }) => {
        octetStream(c);
        const bytes = await readLimited(c, JSON_LIMIT);
        return json(
          c,
          200,
          assetBody(
            await assetView(
              deps,
              principal,
              unwrap(await deps.assets.replaceMetadata(principal, params.id, bytes, guarded(query, version))),
            ),
          ),
        );
      },
    }),
  ];
}
