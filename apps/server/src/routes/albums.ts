import * as v from 'valibot';
import type { UpgradeStatus } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { isoOrNull, json, noContent, unwrap } from '../http/respond.js';
import { Count, DeviceId, Timestamp, Uuid } from './schemas.js';

const AlbumParams = v.object({ album_id: Uuid });

const Status = v.object({
  phase: v.picklist(['normal', 'quiescing', 'frozen']),
  intent_id: v.nullable(Uuid),
  to_version: v.nullable(v.string()),
  expires_at: v.nullable(Timestamp),
  in_flight: Count,
});
named('UpgradeStatus', Status);
const statusBody = (s: UpgradeStatus) => ({
  phase: s.phase,
  intent_id: s.intentId,
  to_version: s.toVersion,
  expires_at: isoOrNull(s.expiresAt),
  in_flight: s.inFlight,
});

const INTENT_CBOR =
  'SignedUpgradeIntent, canonical CBOR: {"intent": {"album_id","from_version","to_version","intent_id","proposer_device","deadline_s"?}, ' +
  '"sig_ed25519": bstr64, "sig_mldsa65": bstr}; both signatures over canonical CBOR ["svc-upgrade-intent/v1", intent]. ' +
  "deadline_s (default 604800) at most 7776000; to_version a date within the server's protocol window; otherwise 400 error.request.invalid.";

/** Albums pinned to a protocol version, and the server side of the upgrade ceremony. */
export function albumRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'POST',
      path: '/v1/albums',
      tag: 'albums',
      summary: "Create an album pinned to the request's X-Svc-Protocol (immutable)",
      auth: true,
      body: { type: 'json', name: 'NewAlbum', schema: v.strictObject({ device_id: DeviceId }) },
      responses: {
        201: {
          description: 'Created',
          name: 'AlbumCreated',
          schema: v.object({ album_id: Uuid, protocol_version: v.string() }),
        },
      },
      errors: ['error.device.unknown', 'error.request.invalid'],
      handle: async ({ c, body, principal, version }) => {
        const a = unwrap(
          await deps.albums.create({
            accountId: principal.accountId,
            actingOwnerId: principal.actingOwnerId,
            deviceId: body.device_id,
            protocolVersion: version,
          }),
        );
        return json(c, 201, { album_id: a.albumId, protocol_version: a.protocolVersion });
      },
    }),
    route({
      method: 'POST',
      path: '/v1/albums/:album_id/upgrade',
      tag: 'albums',
      summary: 'Propose an upgrade: the album enters quiescence under the intent',
      auth: true,
      params: AlbumParams,
      body: { type: 'cbor', description: INTENT_CBOR },
      responses: { 202: { description: 'The upgrade status (the same for the same intent again)', schema: Status } },
      errors: [
        'error.request.invalid',
        'error.not_found',
        'error.protocol.below_album_pin',
        'error.album.intent_mismatch',
        'error.album.proposer_invalid',
        'error.album.upgrade_in_flight',
        'error.conflict',
      ],
      handle: async ({ c, body, params, principal, version }) => {
        const s = unwrap(
          await deps.upgrades.propose(
            { accountId: principal.accountId, actingOwnerId: principal.actingOwnerId, protocolVersion: version },
            params.album_id,
            body,
          ),
        );
        return json(c, 202, statusBody(s));
      },
    }),
    route({
      method: 'GET',
      path: '/v1/albums/:album_id/upgrade',
      tag: 'albums',
      summary: 'Upgrade phase, expiry and the count of uploads in flight',
      auth: true,
      params: AlbumParams,
      responses: {
        200: { description: 'The status; expired quiescence reads as normal with null fields', schema: Status },
      },
      errors: ['error.not_found'],
      handle: async ({ c, params, principal }) =>
        json(c, 200, statusBody(unwrap(await deps.upgrades.status(principal.accountId, params.album_id)))),
    }),
    route({
      method: 'DELETE',
      path: '/v1/albums/:album_id/upgrade',
      tag: 'albums',
      summary: 'Abort the upgrade named by the live intent id',
      auth: true,
      params: AlbumParams,
      query: v.object({ intent_id: Uuid }),
      responses: { 204: { description: 'Aborted: the album is normal again' } },
      errors: ['error.not_found', 'error.conflict', 'error.protocol.below_album_pin', 'error.request.invalid'],
      handle: async ({ c, params, query, principal, version }) => {
        unwrap(
          await deps.upgrades.abort(
            { accountId: principal.accountId, protocolVersion: version },
            params.album_id,
            query.intent_id,
          ),
        );
        return noContent(c);
      },
    }),
  ];
}
