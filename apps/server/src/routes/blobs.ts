import * as v from 'valibot';
import { BLOB_ANSWER, type ReadableBlob, type Result } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { isHeadRequest } from '../http/head.js';
import { HttpProblem } from '../http/problem.js';
import { noneMatch } from '../http/public-record.js';
import { resolveRange } from '../http/range.js';
import { requestHeader } from '../http/request.js';
import { iso, json, streamed, unwrap, withNoStore } from '../http/respond.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute, type HandlerInput } from '../http/route-def.js';
import { ContentHash, Timestamp } from './schemas.js';

const LinkId = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{22}$/, 'must be a link id (16 bytes, base64url)'));
const OwnParams = v.object({ content_hash: ContentHash });
const AsQuery = v.object({
  as: v.optional(
    v.pipe(
      v.picklist(['url']),
      v.description(
        '`url`: answer 200 JSON {"url","expires_at"} naming a presigned URL of the bytes (object storage only; 409 error.conflict on the filesystem store, where this GET itself serves), so a browser fetches the bucket itself with its own Origin and never sends a token there',
      ),
    ),
  ),
});
const PresignedUrl = v.object({
  url: v.pipe(
    v.string(),
    v.description(
      'Presigned GET of the blob in the bucket: the same bytes, ranges included, with the same Content-Type and Cache-Control; send no Authorization with it',
    ),
  ),
  expires_at: v.pipe(Timestamp, v.description('The URL is refused after this (at most 5 minutes from now)')),
});
named('PresignedUrl', PresignedUrl);
const LinkParams = v.object({ link_id: LinkId, content_hash: ContentHash });

/** A blob's bytes never change under its hash, so any cache may keep them for good (but only the reader's own). */
const CACHE_CONTROL = BLOB_ANSWER.cacheControl;

/**
 * Request headers that make an answer depend on more than the bytes. A request carrying any of
 * them is answered here, never redirected: the object store would judge them against its own
 * ETag (an MD5, not the content hash) and answer its own way (an XML 416, a 206 for several ranges).
 */
const ANSWERED_HERE = ['range', 'if-range', 'if-none-match', 'if-match', 'if-modified-since', 'if-unmodified-since'];

const REQUEST_HEADERS = {
  Range:
    'One `bytes=` range (first-last, first-, or -suffix): 206 with Content-Range; wholly past the end: 416. Several ranges, another unit or a malformed value are ignored: 200 with the whole blob.',
  'If-None-Match': 'The blob\'s ETag ("<content_hash>") or *: 304, no body.',
  'If-Range': "With Range: the range is served only when this is the blob's ETag; otherwise the whole blob.",
};
const BYTES_HEADERS = {
  ETag: '"<content_hash>": the blob never changes under it',
  'Cache-Control': CACHE_CONTROL,
  'Accept-Ranges': 'bytes',
  'Content-Length': 'Bytes in this body',
};
const RESPONSES = {
  200: {
    description:
      'The stored ciphertext, streamed; with ?as=url (object storage only), application/json {"url","expires_at"} instead, with Cache-Control: no-store',
    binary: true,
    schema: PresignedUrl,
    headers: BYTES_HEADERS,
  },
  206: {
    description: 'One range of it',
    binary: true,
    headers: { ...BYTES_HEADERS, 'Content-Range': 'bytes <first>-<last>/<size>' },
  },
  304: {
    description: 'If-None-Match named the ETag: no body',
    headers: { ETag: BYTES_HEADERS.ETag, 'Cache-Control': CACHE_CONTROL },
  },
  307: {
    description:
      "Object storage only, for a GET without Range or any If-* header (those are answered with the bytes here): Location is a presigned URL (valid at most 5 minutes) that serves the same bytes with the same Content-Type and Cache-Control; its ETag is the object store's own. The URL carries its own signature: follow it WITHOUT the Authorization header (a browser does; a bucket refuses a request that carries both). A browser sends `Origin: null` after this cross-origin redirect, so the bucket's CORS rule must allow it (README), or use ?as=url",
    headers: { Location: 'The presigned URL', 'Cache-Control': 'no-store' },
  },
  416: { description: 'The range lies wholly outside the blob', headers: { 'Content-Range': 'bytes */<size>' } },
};

/** An AsyncIterable as a pull-driven web stream: one chunk read per chunk the socket takes; cancelling ends the read. */
function pullStream(source: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const it = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await it.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel() {
        await it.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * The answer for a blob the caller may read (spec §10.11): 304 for its own
 * tag, a redirect when the store hands out URLs, else the bytes (one range or all) streamed from
 * the store. A HEAD states the same headers and opens nothing.
 */
async function answer(
  { c, query }: Pick<HandlerInput<unknown, unknown, { as?: 'url' | undefined }>, 'c' | 'query'>,
  found: Result<ReadableBlob, 'error.not_found'>,
): Promise<Response> {
  const blob = unwrap(found);
  if (query.as === 'url') {
    if (blob.presign === null)
      throw new HttpProblem(
        'error.conflict',
        'This server keeps blobs on its own disk and hands out no URLs: GET this path without ?as=url.',
      );
    // A URL is a short-lived bearer of the bytes: no cache keeps the answer.
    withNoStore(c);
    const signed = await blob.presign();
    return json(c, 200, { url: signed.url, expires_at: iso(signed.expiresAt) });
  }
  const etag = `"${blob.contentHash}"`;
  const head = isHeadRequest(c.req.raw);
  const fixed = { etag, 'cache-control': CACHE_CONTROL };
  if (noneMatch(requestHeader(c, 'if-none-match'), etag)) return streamed(c, 304, null, fixed);
  const ifRange = requestHeader(c, 'if-range');
  const range =
    ifRange !== undefined && ifRange.trim() !== etag
      ? { kind: 'whole' as const }
      : resolveRange(requestHeader(c, 'range'), blob.size);
  const bytes = { ...fixed, 'accept-ranges': 'bytes', 'content-type': BLOB_ANSWER.contentType };
  // Judged here, before any redirect: the store's own 416 would be its XML, not this problem.
  if (range.kind === 'unsatisfiable') {
    const p = new HttpProblem(
      'error.request.range_not_satisfiable',
      `The blob has ${blob.size} bytes; the range asks for none of them.`,
      { size: blob.size },
    );
    p.headers = { 'content-range': `bytes */${blob.size}`, ...fixed };
    throw p;
  }
  // A presigned URL is signed for GET only: a HEAD is answered here, from the stat core already took.
  if (blob.presign !== null && !head && ANSWERED_HERE.every((name) => requestHeader(c, name) === undefined))
    return streamed(c, 307, null, { location: (await blob.presign()).url, 'cache-control': 'no-store', etag });
  if (range.kind === 'part') {
    const length = range.end - range.start + 1;
    const body = head ? null : pullStream(await blob.open({ start: range.start, end: range.end }));
    return streamed(c, 206, body, {
      ...bytes,
      'content-length': String(length),
      'content-range': `bytes ${range.start}-${range.end}/${blob.size}`,
    });
  }
  const body = head || blob.size === 0 ? null : pullStream(await blob.open());
  return streamed(c, 200, body, { ...bytes, 'content-length': String(blob.size) });
}

/** Reading blobs back: by the account whose asset references it, or through a share link that covers one. */
export function blobRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'GET',
      path: '/v1/blobs/:content_hash',
      tag: 'blobs',
      summary:
        'A blob that an asset of the account the request acts as references (any role; trashed assets until purged). Anything else, an unknown hash included, is 404.',
      auth: true,
      params: OwnParams,
      query: AsQuery,
      requestHeaders: REQUEST_HEADERS,
      responses: RESPONSES,
      errors: ['error.request.range_not_satisfiable', 'error.conflict', 'error.internal'],
      handle: async (input) =>
        answer(input, await deps.blobReads.forAccount(input.principal, input.params.content_hash)),
    }),
    route({
      method: 'GET',
      path: '/v1/links/:link_id/blobs/:content_hash',
      tag: 'blobs',
      summary:
        "A blob that a live asset covered by this share link references (its asset_ids, or its album's assets); no token. Revoked, expired, unknown and upload links: 404.",
      auth: false,
      params: LinkParams,
      query: AsQuery,
      requestHeaders: REQUEST_HEADERS,
      responses: RESPONSES,
      errors: ['error.request.range_not_satisfiable', 'error.conflict', 'error.internal'],
      handle: async (input) =>
        answer(input, await deps.blobReads.forLink(input.params.link_id, input.params.content_hash)),
    }),
  ];
}
