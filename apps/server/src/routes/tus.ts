import type { Context } from 'hono';
import * as v from 'valibot';
import { MAX_DECLARED_SIZE, type ResumableView } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { bodyChunks, issuesText, requestHeader } from '../http/request.js';
import { iso, json, streamed, unwrap } from '../http/respond.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { Bytes, Timestamp, Uuid } from './schemas.js';
import { Hash, IdParam, UploadState } from './upload-fields.js';

/**
 * Resumable uploads on the tus 1.0 protocol (https://tus.io/protocols/resumable-upload), mapped onto
 * upload sessions: creation is POST /upload (its fields in Upload-Metadata), HEAD reads the durable
 * offset, PATCH appends at it, DELETE is cancel, and the session is finalized with
 * POST /upload/{id}/finalize as any other. Only the wire is read and written here; core decides.
 */

export const TUS_VERSION = '1.0.0';
const TUS_EXTENSIONS = 'creation,termination,checksum,expiration';
const OFFSET_TYPE = 'application/offset+octet-stream';
/** The Upload-Metadata keys, each the POST /upload field of that name. */
const METADATA_KEYS = ['kind', 'content_hash', 'album_id', 'intent_id', 'device_id', 'source_peer'] as const;

const Metadata = v.strictObject({
  kind: v.optional(v.picklist(['original', 'derivative', 'metadata', 'provenance', 'federated']), 'original'),
  content_hash: v.optional(Hash),
  album_id: v.optional(Uuid),
  intent_id: v.optional(Uuid),
  device_id: v.pipe(v.string(), v.minLength(1)),
  source_peer: v.optional(
    v.pipe(v.string(), v.maxLength(2048), v.url(), v.regex(/^https?:\/\//i, 'must be an http(s) URL')),
  ),
});

/** A non-negative whole number header (tus: Upload-Length, Upload-Offset), digits only. */
function wholeNumber(raw: string | undefined, name: string, min: number): number {
  if (raw === undefined) throw new HttpProblem('error.request.invalid', `${name} is required.`);
  const text = raw.trim();
  const value = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min)
    throw new HttpProblem('error.request.invalid', `${name} must be a whole number from ${min} to 2^53-1.`);
  return value;
}

/** tus Upload-Metadata: comma-separated `key base64value` pairs; every key once, each one of ours, with a value. */
export function parseUploadMetadata(raw: string | undefined): v.InferOutput<typeof Metadata> {
  const fields: Record<string, string> = {};
  for (const pair of (raw ?? '').split(',')) {
    if (pair.trim() === '') continue;
    const [key, value, ...rest] = pair.trim().split(' ');
    if (
      key === undefined ||
      value === undefined ||
      rest.length > 0 ||
      !(METADATA_KEYS as readonly string[]).includes(key) ||
      key in fields
    ) {
      throw new HttpProblem(
        'error.request.invalid',
        `Upload-Metadata takes each of ${METADATA_KEYS.join(', ')} at most once, with a base64 value (${key ?? ''}).`,
      );
    }
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0)
      throw new HttpProblem('error.request.invalid', `Upload-Metadata ${key} is not base64.`);
    const text = Buffer.from(value, 'base64').toString('utf8');
    if (Buffer.from(text, 'utf8').toString('base64') !== value)
      throw new HttpProblem('error.request.invalid', `Upload-Metadata ${key} is not UTF-8 text.`);
    fields[key] = text;
  }
  const parsed = v.safeParse(Metadata, fields);
  if (!parsed.success) throw new HttpProblem('error.request.invalid', `Upload-Metadata: ${issuesText(parsed.issues)}`);
  return parsed.output;
}

/** tus Upload-Checksum `sha256 <base64 digest>` as hex; null when absent. Another algorithm is 400 (tus). */
export function parseUploadChecksum(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  const m = /^\s*([A-Za-z0-9-]+) ([A-Za-z0-9+/]{43}=)\s*$/.exec(raw);
  if (m === null || m[1]!.toLowerCase() !== 'sha256')
    throw new HttpProblem(
      'error.request.invalid',
      'Upload-Checksum must be "sha256 <base64 digest>" (Tus-Checksum-Algorithm: sha256).',
    );
  return Buffer.from(m[2]!, 'base64').toString('hex');
}

/** tus 1.0 asks every request but OPTIONS for Tus-Resumable; another version is 412. */
function tusResumable(c: Context): void {
  if (requestHeader(c, 'tus-resumable')?.trim() !== TUS_VERSION) {
    const p = new HttpProblem('error.upload.tus_version', `Send Tus-Resumable: ${TUS_VERSION}.`);
    p.headers = { 'tus-version': TUS_VERSION };
    throw p;
  }
}

/** RFC 9110 date, as tus's Upload-Expires takes it. */
const httpDate = (ms: number): string => new Date(ms).toUTCString();

/** The offset answer's headers: where the upload stands, and that it is not to be cached. */
function offsetHeaders(r: ResumableView): Record<string, string> {
  return {
    'tus-resumable': TUS_VERSION,
    'upload-offset': String(r.offset),
    'upload-length': String(r.length),
    'upload-expires': httpDate(r.expiresAt),
    'cache-control': 'no-store',
  };
}

/** Every answer, refusals included, says Tus-Resumable (a refusal with the session's offset says that too). */
async function tus(answer: () => Promise<Response>): Promise<Response> {
  try {
    return await answer();
  } catch (e) {
    if (e instanceof HttpProblem) {
      const offset = e.data.upload_offset;
      e.headers = {
        ...e.headers,
        'tus-resumable': TUS_VERSION,
        ...(typeof offset === 'number' ? { 'upload-offset': String(offset) } : {}),
      };
    }
    throw e;
  }
}

const OffsetBody = v.object({
  upload_id: Uuid,
  upload_offset: v.pipe(Bytes, v.description('Bytes received so far (the Upload-Offset header)')),
  upload_length: v.pipe(Bytes, v.description('The declared size (the Upload-Length header)')),
  expires_at: Timestamp,
});
named('TusUpload', OffsetBody);

const TUS_HEADERS = {
  'Tus-Resumable': '1.0.0',
  'Upload-Offset': 'Bytes of the upload the server holds durably',
  'Upload-Length': 'The declared size',
  'Upload-Expires': 'When the session expires (RFC 9110 date)',
};

export function tusRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'OPTIONS',
      path: '/upload-tus',
      tag: 'quota',
      summary:
        'tus 1.0 discovery: the version, extensions (creation, termination, checksum, expiration), the largest Upload-Length and the checksum algorithm (sha256). Needs no token',
      auth: false,
      write: false,
      responses: {
        204: {
          description: 'What this server speaks of tus',
          headers: {
            'Tus-Resumable': '1.0.0',
            'Tus-Version': '1.0.0',
            'Tus-Extension': TUS_EXTENSIONS,
            'Tus-Max-Size': String(MAX_DECLARED_SIZE),
            'Tus-Checksum-Algorithm': 'sha256',
          },
        },
      },
      handle: ({ c }) =>
        streamed(c, 204, null, {
          'tus-resumable': TUS_VERSION,
          'tus-version': TUS_VERSION,
          'tus-extension': TUS_EXTENSIONS,
          'tus-max-size': String(MAX_DECLARED_SIZE),
          'tus-checksum-algorithm': 'sha256',
        }),
    }),
    route({
      method: 'POST',
      path: '/upload-tus',
      tag: 'quota',
      summary:
        'tus creation: opens an upload session exactly as POST /upload does (the same device, album, pin, quiescence, open-session and quota checks, the declared size reserved; refusals are its refusals). Upload-Length is declared_size; Upload-Metadata carries the POST /upload fields by their names, values base64 (device_id required; kind defaults to original; content_hash, album_id, intent_id, source_peer optional); any other key is 400. No body (creation-with-upload is not offered). 201 with Location /upload-tus/{upload_id}; send the bytes with PATCH there, then finalize with POST /upload/{id}/finalize',
      auth: true,
      requestHeaders: {
        'Tus-Resumable': '1.0.0 (412 otherwise)',
        'Upload-Length': 'declared_size',
        'Upload-Metadata':
          'kind, content_hash, album_id, intent_id, device_id, source_peer: `key base64value` pairs, comma-separated',
      },
      body: { type: 'empty' },
      responses: {
        201: {
          description: 'Reserved (Pending), as POST /upload answers',
          name: 'TusUploadCreated',
          schema: v.object({ upload_id: Uuid, state: UploadState, expires_at: Timestamp }),
          headers: {
            Location: 'The upload URL (/upload-tus/{upload_id})',
            'Tus-Resumable': '1.0.0',
            'Upload-Expires': 'When the session expires (RFC 9110 date)',
          },
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
        'error.upload.tus_version',
        'error.request.invalid',
        'error.not_found',
      ],
      statusContext: 'federatedFill',
      handle: ({ c, principal, version }) =>
        tus(async () => {
          tusResumable(c);
          if (requestHeader(c, 'upload-defer-length') !== undefined)
            throw new HttpProblem(
              'error.request.invalid',
              'Upload-Defer-Length is not offered: the length is the reservation, declared at creation.',
            );
          const declaredSize = wholeNumber(requestHeader(c, 'upload-length'), 'Upload-Length', 1);
          const m = parseUploadMetadata(requestHeader(c, 'upload-metadata'));
          const u = unwrap(
            await deps.uploads.create(principal, {
              declaredSize,
              kind: m.kind,
              contentHash: m.content_hash ?? null,
              sourcePeer: m.source_peer ?? null,
              albumId: m.album_id ?? null,
              intentId: m.intent_id ?? null,
              deviceId: m.device_id,
              protocolVersion: version,
            }),
          );
          const res = json(c, 201, { upload_id: u.uploadId, state: u.state, expires_at: iso(u.expiresAt) });
          res.headers.set('location', `/upload-tus/${u.uploadId}`);
          res.headers.set('tus-resumable', TUS_VERSION);
          res.headers.set('upload-expires', httpDate(u.expiresAt));
          return res;
        }),
    }),
    route({
      method: 'GET',
      path: '/upload-tus/:id',
      tag: 'quota',
      summary:
        "tus HEAD (GET answers the same with a body): Upload-Offset is what the database holds, durable in every process; a session whose bytes are all in (or finalized) answers its received size. Cancelled or expired: 404. Should the PATCH that recorded the last bytes have stopped before they became the session's, HEAD finishes that step. Whoever may PATCH may ask (a guest with `Authorization: Upload <upload_token>`)",
      auth: true,
      uploadToken: true,
      params: IdParam,
      responses: { 200: { description: 'Where the upload stands', schema: OffsetBody, headers: TUS_HEADERS } },
      errors: ['error.not_found', 'error.upload.tus_version'],
      handle: ({ c, params, principal }) =>
        tus(async () => {
          tusResumable(c);
          const r = unwrap(await deps.resumable.offset(principal, params.id));
          const res = json(c, 200, {
            upload_id: params.id,
            upload_offset: r.offset,
            upload_length: r.length,
            expires_at: iso(r.expiresAt),
          });
          for (const [k, val] of Object.entries(offsetHeaders(r))) res.headers.set(k, val);
          return res;
        }),
    }),
    route({
      method: 'PATCH',
      path: '/upload-tus/:id',
      tag: 'quota',
      summary:
        "tus PATCH: appends the body (application/offset+octet-stream) at Upload-Offset, which must be the offset the server holds (else 409 error.conflict with upload_offset and the Upload-Offset header). The bytes are staged and fsynced, then recorded in the database; 204 carries the new Upload-Offset only after that record is durable. Of two PATCHes at one offset one wins; the other is 409 and nothing of it is kept. Bytes past declared_size: 413 error.upload.too_large, nothing kept. Upload-Checksum `sha256 <base64>` (optional): a mismatch is 460 error.upload.checksum_mismatch, nothing kept. A session not waiting for bytes (received, finalized, cancelled, expired) is 409. A session holds at most 10,000 PATCHes (runs): past that, 429 error.request.too_many (send larger chunks). Once the offset reaches Upload-Length the bytes are the session's (WaitingForProcessing): finalize with POST /upload/{id}/finalize. Bytes of a session opened in an album are a write to it (its pin, 426). A guest sends with `Authorization: Upload <upload_token>`",
      auth: true,
      uploadToken: true,
      params: IdParam,
      requestHeaders: {
        'Tus-Resumable': '1.0.0 (412 otherwise)',
        'Upload-Offset': 'Where these bytes start: the offset the server holds',
        'Upload-Checksum': 'sha256 <base64 digest of this body> (optional)',
      },
      body: { type: 'bytes', description: 'The next bytes of the ciphertext, application/offset+octet-stream' },
      responses: { 204: { description: 'Appended and durable', headers: TUS_HEADERS } },
      errors: [
        'error.conflict',
        'error.not_found',
        'error.upload.too_large',
        'error.upload.checksum_mismatch',
        'error.request.unsupported_media_type',
        'error.protocol.below_album_pin',
        'error.upload.tus_version',
        'error.request.invalid',
        'error.request.too_many',
      ],
      handle: ({ c, params, principal, version }) =>
        tus(async () => {
          tusResumable(c);
          const type = requestHeader(c, 'content-type')?.split(';')[0]?.trim().toLowerCase();
          if (type !== OFFSET_TYPE)
            throw new HttpProblem('error.request.unsupported_media_type', `A tus PATCH takes an ${OFFSET_TYPE} body.`);
          const offset = wholeNumber(requestHeader(c, 'upload-offset'), 'Upload-Offset', 0);
          const sha256 = parseUploadChecksum(requestHeader(c, 'upload-checksum'));
          const r = unwrap(
            await deps.resumable.append(principal, params.id, {
              offset,
              body: bodyChunks(c),
              sha256,
              protocolVersion: version,
            }),
          );
          return streamed(c, 204, null, offsetHeaders(r));
        }),
    }),
    route({
      method: 'DELETE',
      path: '/upload-tus/:id',
      tag: 'quota',
      summary:
        'tus termination: cancels the upload session as DELETE /upload/{id} does (its reservation released, its bytes let go). A session no longer open is 409; a guest cannot terminate (404, as it cannot cancel)',
      auth: true,
      params: IdParam,
      responses: { 204: { description: 'Cancelled', headers: { 'Tus-Resumable': '1.0.0' } } },
      errors: ['error.conflict', 'error.not_found', 'error.upload.tus_version'],
      handle: ({ c, params, principal }) =>
        tus(async () => {
          tusResumable(c);
          unwrap(await deps.uploads.cancel(principal, params.id));
          return streamed(c, 204, null, { 'tus-resumable': TUS_VERSION });
        }),
    }),
  ];
}
