import * as v from 'valibot';
import { SYNC_PAGE_LIMIT, type SyncAlbum, type SyncPageChange } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { iso, json, unwrap } from '../http/respond.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { AssetBody, assetBody } from './assets.js';
import { Count, Timestamp, Uuid } from './schemas.js';
import { LinkSummary, linkSummary } from './sharing.js';

const LinkId = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{22}$/, 'must be a link id (16 bytes, base64url)'));

export const AlbumBody = v.object({
  album_id: Uuid,
  protocol_version: v.pipe(
    v.string(),
    v.description('The version the album is pinned to (its writes need at least it)'),
  ),
  created_at: Timestamp,
  asset_count: v.pipe(Count, v.description('Its live assets (the trash is apart)')),
});
named('Album', AlbumBody);
export const albumBody = (a: SyncAlbum) => ({
  album_id: a.id,
  protocol_version: a.protocolVersion,
  created_at: iso(a.createdAt),
  asset_count: a.assetCount,
});

const Limit = v.pipe(
  v.string(),
  v.regex(/^[1-9][0-9]{0,3}$/, `must be a whole number from ${SYNC_PAGE_LIMIT.min} to ${SYNC_PAGE_LIMIT.max}`),
  v.transform(Number),
  v.maxValue(SYNC_PAGE_LIMIT.max, `must be a whole number from ${SYNC_PAGE_LIMIT.min} to ${SYNC_PAGE_LIMIT.max}`),
  v.description(
    `How many changes at most (${SYNC_PAGE_LIMIT.min} to ${SYNC_PAGE_LIMIT.max}, default ${SYNC_PAGE_LIMIT.default})`,
  ),
);
const Cursor = v.pipe(
  v.string(),
  v.maxLength(512),
  v.description('The cursor of the previous page, as it was given (opaque)'),
);
const PageQuery = v.object({ cursor: v.optional(Cursor), limit: v.optional(Limit) });

const Change = v.object({
  kind: v.picklist(['album', 'asset', 'link']),
  id: v.pipe(v.string(), v.description('The album or asset id, or the link id')),
  op: v.picklist(['upsert', 'remove']),
  record: v.pipe(
    v.nullable(v.union([AlbumBody, AssetBody, LinkSummary])),
    v.description(
      'An upsert: the object as GET answers it now (an album, an asset, a link as GET /v1/links lists it). A removal: null',
    ),
  ),
});
named('SyncChange', Change);
const SyncPage = v.object({
  changes: v.array(Change),
  cursor: v.pipe(
    v.string(),
    v.description('Where the next page starts: send it back as `cursor`, now or on the next sync'),
  ),
  has_more: v.pipe(v.boolean(), v.description('More changes wait: ask again with the cursor at once')),
});
named('SyncPage', SyncPage);
const LinkAssetPage = v.object({
  changes: v.array(
    named(
      'LinkAssetChange',
      v.object({ kind: v.literal('asset'), id: Uuid, op: v.literal('upsert'), record: AssetBody }),
    ),
  ),
  cursor: v.string(),
  has_more: v.boolean(),
});
named('LinkAssetPage', LinkAssetPage);

const SYNC_SUMMARY =
  "The account's changes since `cursor`, in the order its writes committed: without a cursor every live album, asset and link once; " +
  'with one, each object created, trashed, restored, its metadata replaced or a blob added, purged or revoked since the page that gave the cursor, ' +
  'once, as it now stands. A write committed while a client pages appears on a later page. Removals are kept SVC_SYNC_TOMBSTONE_DAYS (default 90): ' +
  "an older cursor is 410 error.sync.cursor_expired, and the client syncs again without one. A cursor is bound to its account (another account's: 400)";

/** Library sync, the album listing, and what a share link covers. */
export function syncRoutes(deps: AppDeps): AnyRoute[] {
  const change = (c: SyncPageChange, now: number) => ({
    kind: c.kind,
    id: c.id,
    op: c.op,
    record:
      c.record === null
        ? null
        : c.kind === 'album'
          ? albumBody(c.record)
          : c.kind === 'asset'
            ? assetBody(c.record)
            : linkSummary(c.record, now),
  });
  return [
    route({
      method: 'GET',
      path: '/v1/sync',
      tag: 'sync',
      summary: SYNC_SUMMARY,
      auth: true,
      query: PageQuery,
      responses: { 200: { description: 'A page of changes', schema: SyncPage } },
      errors: ['error.request.invalid', 'error.sync.cursor_expired'],
      handle: async ({ c, query, principal }) => {
        const page = unwrap(
          await deps.sync.page(principal, query.cursor ?? null, query.limit ?? SYNC_PAGE_LIMIT.default),
        );
        const now = deps.clock.now();
        return json(c, 200, {
          changes: page.changes.map((ch) => change(ch, now)),
          cursor: page.cursor,
          has_more: page.hasMore,
        });
      },
    }),
    route({
      method: 'GET',
      path: '/v1/albums',
      tag: 'albums',
      summary: "The caller's albums, oldest first",
      auth: true,
      responses: {
        200: { description: 'Albums', name: 'AlbumList', schema: v.object({ albums: v.array(AlbumBody) }) },
      },
      handle: async ({ c, principal }) => json(c, 200, { albums: (await deps.sync.albums(principal)).map(albumBody) }),
    }),
    route({
      method: 'GET',
      path: '/v1/albums/:album_id',
      tag: 'albums',
      summary: "One of the caller's albums",
      auth: true,
      params: v.object({ album_id: Uuid }),
      responses: { 200: { description: 'The album', schema: AlbumBody } },
      errors: ['error.not_found'],
      handle: async ({ c, params, principal }) =>
        json(c, 200, albumBody(unwrap(await deps.sync.album(principal, params.album_id)))),
    }),
    route({
      method: 'GET',
      path: '/v1/links/:link_id/assets',
      tag: 'links',
      summary:
        'What a share link covers, without a token: its live assets (named by the link, or in its album), blobs included, in pages by asset id. ' +
        "404 as for the link itself (revoked, expired, unknown, or an upload link); a cursor of another link's listing is 400",
      auth: false,
      params: v.object({ link_id: LinkId }),
      query: PageQuery,
      responses: { 200: { description: 'A page of the assets it covers', schema: LinkAssetPage } },
      errors: ['error.not_found', 'error.request.invalid'],
      handle: async ({ c, params, query }) => {
        const page = unwrap(
          await deps.sync.linkAssets(params.link_id, query.cursor ?? null, query.limit ?? SYNC_PAGE_LIMIT.default),
        );
        return json(c, 200, {
          changes: page.changes.map((a) => ({ kind: 'asset', id: a.id, op: 'upsert', record: assetBody(a) })),
          cursor: page.cursor,
          has_more: page.hasMore,
        });
      },
    }),
  ];
}
