import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, type ReadStream } from 'node:fs';
import { mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  type ListPartsCommandOutput,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import {
  CoreError,
  type Arrived,
  type BlobStat,
  type BlobStore,
  type ByteRange,
  type DirectPut,
  type DirectPutGrant,
  type ListedBlob,
  type MultipartStaging,
  type PartGrant,
  type PresignedAnswer,
  type QuarantinedBlob,
  type StagedBlob,
  type StoredPart,
  type StoreFault,
} from '@strongroom/core';

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;
const HASH = /^[0-9a-f]{64}$/;
/** A quarantined copy's key name: its content hash and a random suffix of its own. */
const QUARANTINED = /^([0-9a-f]{64})\.([0-9a-f]{16})$/;
const MiB = 1024 * 1024;
/** What follows `<id>.` in a key of the server's own under `received/`: a fresh name per write. */
const RECEIVED_SUFFIX = /^[0-9a-f]{16}$/;
/** A name under `received/`: a staging id's bytes (`<id>.<16 hex>`) or its seal (`<id>.seal`). */
const RECEIVED_NAME = /^([A-Za-z0-9_-]{1,128})\.(?:[0-9a-f]{16}|seal)$/;

/**
 * Staged bytes in a key of the server's own, as their seal names them: the key (written once,
 * never again), their size and SHA-256, and the ETag they had when they were hashed.
 */
interface Sealed {
  readonly key: string;
  readonly size: number;
  readonly sha256: string;
  readonly etag: string;
}

/** The hex SHA-256 a HEAD reports for the whole object (never a checksum of part checksums); null when none. */
function fullObjectSha256(head: { ChecksumSHA256?: string; ChecksumType?: string }): string | null {
  const checksum = head.ChecksumSHA256;
  if (checksum === undefined || head.ChecksumType === 'COMPOSITE' || checksum.includes('-')) return null;
  return Buffer.from(checksum, 'base64').toString('hex');
}

export interface S3BlobStoreOptions {
  readonly bucket: string;
  /** Key prefix inside the bucket ("" or ending without a slash; one is added). */
  readonly prefix?: string;
  /** An S3-compatible endpoint (MinIO, R2, B2, Ceph); unset: AWS for the region. */
  readonly endpoint?: string;
  readonly region?: string;
  /** Path-style addressing (`endpoint/bucket/key`), which most self-hosted stores need. */
  readonly forcePathStyle?: boolean;
  /**
   * Explicit credentials (tests). Unset: the SDK's standard provider chain (environment,
   * shared config and credentials files, SSO, web identity, container and instance metadata).
   */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /**
   * How long connecting, or a request on which no byte moves, may take before the attempt fails
   * (default 10 s; connecting gets a third of it). With `maxAttempts` this bounds how long an
   * operation waits on an unreachable store before it fails with error.store.unavailable.
   */
  readonly timeoutMs?: number;
  /** Attempts per request, the first included (default 2). */
  readonly maxAttempts?: number;
  /**
   * Bytes per multipart part while staging (default 8 MiB, at least S3's 5 MiB minimum): a body
   * up to this size is one PUT, a larger one a multipart upload, each part waiting in a file under `spillDir` while it fills.
   */
  readonly partBytes?: number;
  /** Objects larger than this are copied to their content address part by part (S3 copies at most 5 GiB at once). */
  readonly copyPartBytes?: number;
  /**
   * Where a part waits on the local disk while it fills (default the system's temp directory):
   * at most two files per upload (the part travelling to the store and the next one filling),
   * removed when the stage ends.
   */
  readonly spillDir?: string;
  /** Replaces the client built from the options (tests; built as this one is, with checksums only when required). */
  readonly client?: S3Client;
  /**
   * Direct transfers (default true): the store signs URLs through which clients send an upload's
   * bytes to staging and fetch blobs themselves (presignPut, arrived, presignGet). False leaves
   * those out, so the server carries every byte (clients that cannot reach the bucket).
   */
  readonly direct?: boolean;
}

/** The SDK's answer for a key that is not there (GET says NoSuchKey, HEAD only a 404). */
function isNotFound(e: unknown): boolean {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return err?.name === 'NoSuchKey' || err?.name === 'NotFound' || err?.$metadata?.httpStatusCode === 404;
}

/**
 * Content-addressed blobs in an S3-compatible bucket. A client's direct upload lands under
 * `<prefix>/staging/<id>` (the only key a signed upload URL names); the server's own bytes of an
 * upload live under `<prefix>/received/<id>.<16 hex>`, a fresh key per write that no URL reaches
 * and nothing writes twice, with a seal beside it (`received/<id>.seal`: that key, its size,
 * SHA-256 and ETag). A proxied body is hashed as it streams in and written there; a client's object
 * is copied there inside the store (pinned to its ETag) and hashed there once, or taken with the
 * store's full-object checksum. Commit copies sealed bytes to `<prefix>/blobs/<2 hex>/<sha256>`
 * without reading them again, pinned to the sealed ETag (a key changed since is hashed again);
 * an object appears only whole (one PUT, or a multipart upload visible only once completed), so a
 * crash, an oversize or failed body, a wrong hash, or a staged object replaced through its URL
 * leaves nothing wrong under a content address, and an address holding its bytes is never
 * rewritten. Staged bytes stay until discarded. The sweep's quarantine is
 * `<prefix>/quarantine/<sha256>.<16 hex>`: a copy, then a delete of the address (and back).
 * Any failure to reach the store is a CoreError `error.store.unavailable` (503), never taken for
 * an absent object.
 */
export class S3BlobStore implements BlobStore {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #partBytes: number;
  readonly #copyPartBytes: number;
  readonly #spillDir: string;

  declare readonly presignGet?: (contentHash: string, ttlS: number, answer: PresignedAnswer) => Promise<string>;
  declare readonly presignPut?: (stagingId: string, grant: DirectPutGrant) => Promise<DirectPut>;
  declare readonly arrived?: (stagingId: string, maxBytes: number) => Promise<Arrived>;
  declare readonly multipart?: MultipartStaging;

  constructor(options: S3BlobStoreOptions) {
    this.#bucket = options.bucket;
    const prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '');
    this.#prefix = prefix === '' ? '' : `${prefix}/`;
    this.#partBytes = Math.max(options.partBytes ?? 8 * MiB, 5 * MiB);
    this.#copyPartBytes = options.copyPartBytes ?? 5 * 1024 * MiB;
    this.#spillDir = options.spillDir ?? join(tmpdir(), 'strongroom-s3-parts');
    const timeoutMs = options.timeoutMs ?? 10_000;
    const config: S3ClientConfig = {
      region: options.region ?? 'us-east-1',
      forcePathStyle: options.forcePathStyle ?? false,
      maxAttempts: options.maxAttempts ?? 2,
      requestHandler: {
        connectionTimeout: Math.ceil(timeoutMs / 3),
        requestTimeout: timeoutMs,
        throwOnRequestTimeout: true,
      },
      // Only the checksums an operation requires: not every S3-compatible store accepts the
      // newer default CRC32 trailers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: { ...options.credentials } } : {}),
    };
    this.#client = options.client ?? new S3Client(config);
    if (options.direct !== false) {
      // Own properties, only when on: a store without them is one the server carries bytes for.
      Object.assign(this, {
        presignGet: (hash: string, ttlS: number, answer: PresignedAnswer) => this.#presignGet(hash, ttlS, answer),
        presignPut: (id: string, grant: DirectPutGrant) => this.#presignPut(id, grant),
        arrived: (id: string, maxBytes: number) => this.#arrived(id, maxBytes),
        multipart: {
          presignParts: (id: string, grants: readonly PartGrant[]) => this.#presignParts(id, grants),
          parts: (id: string) => this.#parts(id),
          complete: (id: string, parts: readonly StoredPart[]) => this.#complete(id, parts),
          abort: (id: string) => this.#abort(id),
          listOpen: () => this.#listOpen(),
        } satisfies MultipartStaging,
      });
    }
  }

  /**
   * A GET of the blob's key, signed for `ttlS` seconds; Range passes through unsigned, as S3 allows.
   * The answer's Cache-Control and Content-Type are set by the signed response-* overrides.
   */
  async #presignGet(contentHash: string, ttlS: number, answer: PresignedAnswer): Promise<string> {
    const key = this.#blobKey(contentHash);
    const command = new GetObjectCommand({
      Bucket: this.#bucket,
      Key: key,
      ResponseCacheControl: answer.cacheControl,
      ResponseContentType: answer.contentType,
    });
    return this.#send('signing a download URL', () => getSignedUrl(this.#client, command, { expiresIn: ttlS }));
  }

  /**
   * A PUT of the upload's staging key, signed for `grant.ttlS` seconds with Content-Length (and,
   * with an announced hash, x-amz-checksum-sha256) among the signed headers: a store refuses
   * another length, and S3 refuses a body whose SHA-256 is not the signed one. Single PUT: up to
   * 5 GiB, S3's limit for one request.
   */
  async #presignPut(stagingId: string, grant: DirectPutGrant): Promise<DirectPut> {
    const key = this.#stagedKey(stagingId);
    const checksum = grant.sha256 === null ? null : Buffer.from(grant.sha256, 'hex').toString('base64');
    const command = new PutObjectCommand({
      Bucket: this.#bucket,
      Key: key,
      ContentLength: grant.size,
      ...(checksum === null ? {} : { ChecksumSHA256: checksum }),
    });
    const url = await this.#send('signing an upload URL', () =>
      getSignedUrl(this.#client, command, {
        expiresIn: grant.ttlS,
        signableHeaders: new Set(['content-length', ...(checksum === null ? [] : ['x-amz-checksum-sha256'])]),
        unhoistableHeaders: new Set(checksum === null ? [] : ['x-amz-checksum-sha256']),
      }),
    );
    return {
      url,
      headers: {
        'content-length': String(grant.size),
        ...(checksum === null ? {} : { 'x-amz-checksum-sha256': checksum }),
      },
    };
  }

  /**
   * What a direct PUT (or a completed multipart upload) left in staging, taken into a key of the
   * server's own: see #adopt.
   */
  async #arrived(stagingId: string, maxBytes: number): Promise<Arrived> {
    const adopted = await this.#adopt(stagingId, maxBytes);
    return typeof adopted === 'string' ? adopted : { size: adopted.size, sha256: adopted.sha256 };
  }

  /**
   * Takes what a client wrote under `staging/<id>` into a fresh key of the server's own
   * (`received/<id>.<16 hex>`, for which no URL is ever signed), copied inside the store and pinned
   * to the ETag seen, and learns the copy's SHA-256 there: from the store's full-object checksum
   * when the staged object and its copy both carry the same one (S3 verified it against the signed
   * header as the bytes arrived, and the copy was made of that very object), else by reading the
   * copy once, streamed. The result is sealed (#writeSeal), so commit copies it to its address
   * without reading it again. A client that still holds its URL can only replace the staging key,
   * never this copy. Past `maxBytes` both objects are deleted ('too_large'); 'nothing' when no
   * object is staged, or it changed between its HEAD and the copy (the finalize may be asked again).
   */
  async #adopt(stagingId: string, maxBytes: number): Promise<Sealed | 'too_large' | 'nothing'> {
    const staged = this.#stagedKey(stagingId);
    let head;
    try {
      head = await this.#client.send(
        new HeadObjectCommand({ Bucket: this.#bucket, Key: staged, ChecksumMode: 'ENABLED' }),
      );
    } catch (e) {
      if (isNotFound(e)) return 'nothing';
      throw new CoreError('error.store.unavailable', 'object store: checking staged bytes failed', {
        cause: e,
        fault: faultOf(e),
      });
    }
    const size = head.ContentLength ?? 0;
    if (size > maxBytes) {
      await this.#deleteKey(staged, 'discarding staged bytes');
      return 'too_large';
    }
    const key = this.#receivedKey(stagingId);
    try {
      await this.#copy(staged, key, size, head.ETag, 'taking staged bytes in');
    } catch (e) {
      if (await this.#copyLostSource(e, staged)) return 'nothing';
      throw e;
    }
    let sealed: Sealed | 'too_large' | null = null;
    const checksum = fullObjectSha256(head);
    if (checksum !== null) {
      const copied = await this.#client
        .send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key, ChecksumMode: 'ENABLED' }))
        .catch(() => null);
      if (copied !== null && fullObjectSha256(copied) === checksum && copied.ContentLength === size && copied.ETag)
        sealed = { key, size, sha256: checksum, etag: copied.ETag };
    }
    sealed ??= await this.#hashKey(key, maxBytes);
    if (sealed === null || sealed === 'too_large') {
      await this.#deleteKey(key, 'discarding staged bytes');
      if (sealed === null) return 'nothing';
      await this.#deleteKey(staged, 'discarding staged bytes');
      return 'too_large';
    }
    await this.#writeSeal(stagingId, sealed);
    return sealed;
  }

  /**
   * Reads the object at `key` once, streamed: its size, SHA-256 and the ETag the bytes came with.
   * Null when it is gone; 'too_large' past `maxBytes` (the read stops there).
   */
  async #hashKey(key: string, maxBytes: number): Promise<Sealed | 'too_large' | null> {
    let object;
    try {
      object = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }));
    } catch (e) {
      if (isNotFound(e)) return null;
      throw new CoreError('error.store.unavailable', 'object store: reading staged bytes failed', {
        cause: e,
        fault: faultOf(e),
      });
    }
    const hash = createHash('sha256');
    let size = 0;
    const body = object.Body as AsyncIterable<Uint8Array> & { destroy?: () => void };
    const over = await this.#send('reading staged bytes', async () => {
      for await (const chunk of body) {
        size += chunk.length;
        if (size > maxBytes) {
          body.destroy?.();
          return true;
        }
        hash.update(chunk);
      }
      return false;
    });
    if (over) return 'too_large';
    if (!object.ETag) throw new CoreError('error.store.unavailable', 'object store: a read answered no ETag');
    return { key, size, sha256: hash.digest('hex'), etag: object.ETag };
  }

  /**
   * The seal of `stagingId` (`received/<id>.seal`): which key of the server's own holds its staged
   * bytes, their size and SHA-256, and the ETag they were hashed under. Written after those bytes,
   * by the one who hashed them; null when there is none, or it does not parse as one.
   */
  async #readSeal(stagingId: string): Promise<Sealed | null> {
    let text: string;
    try {
      const object = await this.#client.send(
        new GetObjectCommand({ Bucket: this.#bucket, Key: this.#sealKey(stagingId) }),
      );
      text = await (object.Body as { transformToString(): Promise<string> }).transformToString();
    } catch (e) {
      if (isNotFound(e)) return null;
      throw new CoreError('error.store.unavailable', 'object store: reading a seal failed', {
        cause: e,
        fault: faultOf(e),
      });
    }
    try {
      const seal = JSON.parse(text) as Partial<Sealed>;
      const ownKey = `${this.#prefix}received/${stagingId}.`;
      return typeof seal.key === 'string' &&
        seal.key.startsWith(ownKey) &&
        RECEIVED_SUFFIX.test(seal.key.slice(ownKey.length)) &&
        Number.isSafeInteger(seal.size) &&
        typeof seal.sha256 === 'string' &&
        HASH.test(seal.sha256) &&
        typeof seal.etag === 'string'
        ? { key: seal.key, size: seal.size!, sha256: seal.sha256, etag: seal.etag }
        : null;
    } catch {
      return null;
    }
  }

  /** Writes the seal of `stagingId` in one PUT (an object appears whole or not at all). */
  async #writeSeal(stagingId: string, sealed: Sealed): Promise<void> {
    const body = new TextEncoder().encode(JSON.stringify(sealed));
    await this.#send('sealing staged bytes', () =>
      this.#client.send(
        new PutObjectCommand({
          Bucket: this.#bucket,
          Key: this.#sealKey(stagingId),
          Body: body,
          ContentLength: body.length,
        }),
      ),
    );
  }

  async #deleteKey(key: string, what: string): Promise<void> {
    await this.#send(what, () => this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key })));
  }

  /**
   * The multipart uploads open under exactly `key`, oldest first (then by id): every caller settles
   * on the first, so two openings that raced name the same upload. S3 itself is where an upload's
   * id is kept, so any process finds it.
   */
  async #uploadsOf(key: string): Promise<string[]> {
    const found: { id: string; at: number }[] = [];
    for await (const u of this.#multipartUploadsUnder(key)) if (u.key === key) found.push({ id: u.uploadId, at: u.at });
    return found.sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((u) => u.id);
  }

  /** Every open multipart upload whose key starts with `prefix` (ListMultipartUploads, page by page). */
  async *#multipartUploadsUnder(prefix: string): AsyncIterable<{ key: string; uploadId: string; at: number }> {
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const command = new ListMultipartUploadsCommand({
        Bucket: this.#bucket,
        Prefix: prefix,
        ...(keyMarker ? { KeyMarker: keyMarker } : {}),
        ...(uploadIdMarker ? { UploadIdMarker: uploadIdMarker } : {}),
      });
      this.#bucketPath(command);
      const page = await this.#send('listing multipart uploads', () => this.#client.send(command));
      for (const u of page.Uploads ?? [])
        if (u.Key && u.UploadId) yield { key: u.Key, uploadId: u.UploadId, at: u.Initiated?.getTime() ?? 0 };
      if (!page.IsTruncated) return;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
      if (!keyMarker && !uploadIdMarker) return;
    }
  }

  /**
   * The staging key's open multipart upload, opened (with SHA-256 part checksums) if none is. When
   * two openings race, each lists again after creating and settles on the oldest; a loser aborts
   * its own, so at most one stays.
   */
  async #openUploadOf(key: string): Promise<string> {
    const open = (await this.#uploadsOf(key))[0];
    if (open !== undefined) return open;
    const created = await this.#send('starting a multipart upload', () =>
      this.#client.send(
        new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key: key, ChecksumAlgorithm: 'SHA256' }),
      ),
    );
    const mine = created.UploadId;
    if (!mine) throw new CoreError('error.store.unavailable', 'object store: no multipart upload id');
    const first = (await this.#uploadsOf(key))[0] ?? mine;
    if (first !== mine)
      await this.#client
        .send(new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key: key, UploadId: mine }))
        .catch(() => undefined);
    return first;
  }

  /**
   * A PUT per part of the staging key's multipart upload, each signed for its grant's `ttlS` with
   * Content-Length and x-amz-checksum-sha256 among the signed headers (the query names the upload
   * and the part number, which the signature covers): S3 refuses another length, another body,
   * another part number or another upload.
   */
  async #presignParts(stagingId: string, grants: readonly PartGrant[]): Promise<DirectPut[]> {
    const key = this.#stagedKey(stagingId);
    const uploadId = await this.#openUploadOf(key);
    return Promise.all(
      grants.map(async (grant) => {
        const checksum = Buffer.from(grant.sha256, 'hex').toString('base64');
        const command = new UploadPartCommand({
          Bucket: this.#bucket,
          Key: key,
          UploadId: uploadId,
          PartNumber: grant.partNumber,
          ContentLength: grant.size,
          ChecksumSHA256: checksum,
        });
        const url = await this.#send('signing a part URL', () =>
          getSignedUrl(this.#client, command, {
            expiresIn: grant.ttlS,
            signableHeaders: new Set(['content-length', 'x-amz-checksum-sha256']),
            unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
          }),
        );
        return { url, headers: { 'content-length': String(grant.size), 'x-amz-checksum-sha256': checksum } };
      }),
    );
  }

  /** What the staging key's open multipart upload holds (ListParts, page by page); null when none is open. */
  async #parts(stagingId: string): Promise<StoredPart[] | null> {
    const key = this.#stagedKey(stagingId);
    const uploadId = (await this.#uploadsOf(key))[0];
    if (uploadId === undefined) return null;
    const parts: StoredPart[] = [];
    let marker: string | undefined;
    for (;;) {
      let page: ListPartsCommandOutput;
      try {
        page = await this.#client.send(
          new ListPartsCommand({
            Bucket: this.#bucket,
            Key: key,
            UploadId: uploadId,
            ...(marker ? { PartNumberMarker: marker } : {}),
          }),
        );
      } catch (e) {
        // Completed or aborted since it was listed.
        if (isNotFound(e)) return null;
        throw new CoreError('error.store.unavailable', 'object store: listing parts failed', {
          cause: e,
          fault: faultOf(e),
        });
      }
      for (const p of page.Parts ?? [])
        if (p.PartNumber !== undefined && p.ETag !== undefined)
          parts.push({ partNumber: p.PartNumber, size: p.Size ?? 0, etag: p.ETag, checksum: p.ChecksumSHA256 ?? null });
      if (!page.IsTruncated || !page.NextPartNumberMarker) return parts;
      marker = page.NextPartNumberMarker;
    }
  }

  /** Assembles the named parts under the staging key (CompleteMultipartUpload); 'nothing' when no upload is open. */
  async #complete(stagingId: string, parts: readonly StoredPart[]): Promise<'completed' | 'nothing'> {
    const key = this.#stagedKey(stagingId);
    const uploadId = (await this.#uploadsOf(key))[0];
    if (uploadId === undefined) return 'nothing';
    try {
      await this.#client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.#bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: {
            Parts: parts.map((p) => ({
              PartNumber: p.partNumber,
              ETag: p.etag,
              ...(p.checksum === null ? {} : { ChecksumSHA256: p.checksum }),
            })),
          },
        }),
      );
    } catch (e) {
      if (isNotFound(e)) return 'nothing';
      throw new CoreError('error.store.unavailable', 'object store: completing a multipart upload failed', {
        cause: e,
        fault: faultOf(e),
      });
    }
    return 'completed';
  }

  /**
   * Aborts every multipart upload open under the staging key, and those of the server's own
   * stages of the id under `received/`; one already gone is nothing to do.
   */
  async #abort(stagingId: string): Promise<void> {
    const key = this.#stagedKey(stagingId);
    const open: { key: string; uploadId: string }[] = (await this.#uploadsOf(key)).map((uploadId) => ({
      key,
      uploadId,
    }));
    for await (const u of this.#multipartUploadsUnder(`${this.#prefix}received/${stagingId}.`)) open.push(u);
    for (const u of open) {
      try {
        await this.#client.send(
          new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key: u.key, UploadId: u.uploadId }),
        );
      } catch (e) {
        if (!isNotFound(e))
          throw new CoreError('error.store.unavailable', 'object store: aborting a multipart upload failed', {
            cause: e,
            fault: faultOf(e),
          });
      }
    }
  }

  /**
   * The staging ids with a multipart upload open under `<prefix>staging/` (a client's parts) or
   * `<prefix>received/` (a stage of the server's own cut short), each once.
   */
  async *#listOpen(): AsyncIterable<string> {
    const seen = new Set<string>();
    for (const [under, idOf] of [
      [`${this.#prefix}staging/`, (name: string) => (SAFE_ID.test(name) ? name : null)],
      [`${this.#prefix}received/`, (name: string) => RECEIVED_NAME.exec(name)?.[1] ?? null],
    ] as const) {
      for await (const u of this.#multipartUploadsUnder(under)) {
        const id = idOf(u.key.slice(under.length));
        if (id !== null && !seen.has(id)) {
          seen.add(id);
          yield id;
        }
      }
    }
  }

  #stagedKey(id: string): string {
    if (!SAFE_ID.test(id)) throw new RangeError('bad staging id');
    return `${this.#prefix}staging/${id}`;
  }
  /**
   * A fresh key of the server's own for a staging id's bytes: under `received/`, where no URL is
   * ever signed (presignPut and presignParts name only `staging/`), and never written twice.
   */
  #receivedKey(id: string): string {
    if (!SAFE_ID.test(id)) throw new RangeError('bad staging id');
    return `${this.#prefix}received/${id}.${randomBytes(8).toString('hex')}`;
  }
  #sealKey(id: string): string {
    if (!SAFE_ID.test(id)) throw new RangeError('bad staging id');
    return `${this.#prefix}received/${id}.seal`;
  }
  #blobKey(hash: string): string {
    if (!HASH.test(hash)) throw new RangeError('bad content hash');
    return `${this.#prefix}blobs/${hash.slice(0, 2)}/${hash}`;
  }

  /** Sends one request; any failure becomes error.store.unavailable (the caller handles 404 first where it means absent). */
  async #send<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (cause) {
      throw new CoreError('error.store.unavailable', `object store: ${what} failed`, { cause, fault: faultOf(cause) });
    }
  }

  async stage(stagingId: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StagedBlob | null> {
    // A key of the server's own, fresh for this stage: no URL reaches it, and nothing writes it
    // again, so the hash computed here as the bytes stream in is its bytes' hash until it is gone.
    const key = this.#receivedKey(stagingId);
    const hash = createHash('sha256');
    let size = 0;
    // A part waits in a local file, not in memory: twenty uploads at once then hold twenty
    // streams' worth of chunks, not twenty parts (S3 wants each part's length before its body).
    // Two files take turns: one part goes to the store while the next fills from the client, so
    // the client's connection is not held still while a part travels (at most one part in flight).
    await mkdir(this.#spillDir, { recursive: true, mode: 0o700 });
    const spills: PartFile[] = [];
    const spillFile = async (): Promise<PartFile> => {
      const path = join(this.#spillDir, `${stagingId}.${randomBytes(6).toString('hex')}.part`);
      const file: PartFile = { path, handle: await open(path, 'w+', 0o600), length: 0 };
      spills.push(file);
      return file;
    };
    /** The parts' read streams: ended before their files are removed. */
    const reads: ReadStream[] = [];
    /**
     * A part's bytes from its file, afresh for each attempt (a stream is read once). A read stream
     * opens its file only when it starts, and a request the store refused may never start it: the
     * stage then removes the file, and the failed open would be an error event no request listens
     * to, which ends the process. A request that reads the stream hears its errors itself; the
     * listener here only keeps an unread stream's from being thrown.
     */
    const bodyOf = (part: PartFile, length: number) => {
      if (length === 0) return new Uint8Array(0);
      const stream = createReadStream(part.path, { start: 0, end: length - 1 });
      stream.on('error', () => undefined);
      reads.push(stream);
      return stream;
    };
    let uploadId: string | null = null;
    const parts: { PartNumber: number; ETag: string }[] = [];
    /** The part on its way to the store, if one is; settled before its file is filled again. */
    let inFlight: Promise<void> | null = null;
    const settle = async (): Promise<void> => {
      const sending = inFlight;
      inFlight = null;
      await sending;
    };
    const sendPart = async (part: PartFile): Promise<void> => {
      if (uploadId === null) {
        const created = await this.#send('starting a multipart upload', () =>
          this.#client.send(new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key: key })),
        );
        uploadId = created.UploadId ?? null;
        if (uploadId === null) throw new CoreError('error.store.unavailable', 'object store: no multipart upload id');
      }
      const partNumber = parts.length + 1;
      const id = uploadId;
      const length = part.length;
      const sent = await this.#sendTwice('uploading a part', () =>
        this.#client.send(
          unsignedPayload(
            new UploadPartCommand({
              Bucket: this.#bucket,
              Key: key,
              UploadId: id,
              PartNumber: partNumber,
              Body: bodyOf(part, length),
              ContentLength: length,
            }),
          ),
        ),
      );
      parts.push({ PartNumber: partNumber, ETag: sent.ETag ?? '' });
    };
    let kept = false;
    let etag: string | undefined;
    try {
      let filling = await spillFile();
      // Chunks are gathered into writes of SPILL_BATCH_BYTES: one write per 64 KiB chunk costs a
      // trip to libuv's thread pool each (see the filesystem store's stage).
      let pending: Uint8Array[] = [];
      let pendingBytes = 0;
      const spillPending = async (): Promise<void> => {
        if (pendingBytes === 0) return;
        await writeAllAt(filling.handle, pending, filling.length);
        filling.length += pendingBytes;
        pending = [];
        pendingBytes = 0;
      };
      /** Sends the filled part (after the one before it) and turns to the other file. */
      const handOver = async (): Promise<void> => {
        await settle();
        const full = filling;
        const sending = sendPart(full);
        // Settled by `settle` (or the cleanup below); a failure is seen there, not unhandled here.
        sending.catch(() => undefined);
        inFlight = sending;
        filling = spills.find((f) => f !== full) ?? (await spillFile());
        filling.length = 0;
        await filling.handle.truncate(0);
      };
      for await (const chunk of body) {
        size += chunk.length;
        if (size > maxBytes) return null;
        hash.update(chunk);
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes >= SPILL_BATCH_BYTES || filling.length + pendingBytes >= this.#partBytes) {
          await spillPending();
          if (filling.length >= this.#partBytes) await handOver();
        }
      }
      await spillPending();
      await settle();
      if (uploadId === null) {
        const whole = filling;
        const length = whole.length;
        const put = await this.#sendTwice('storing staged bytes', () =>
          this.#client.send(
            unsignedPayload(
              new PutObjectCommand({
                Bucket: this.#bucket,
                Key: key,
                Body: bodyOf(whole, length),
                ContentLength: length,
              }),
            ),
          ),
        );
        etag = put.ETag;
      } else {
        if (filling.length > 0) await sendPart(filling);
        const id: string = uploadId;
        const completed = await this.#send('completing a multipart upload', () =>
          this.#client.send(
            new CompleteMultipartUploadCommand({
              Bucket: this.#bucket,
              Key: key,
              UploadId: id,
              MultipartUpload: { Parts: parts },
            }),
          ),
        );
        etag = completed.ETag;
      }
      etag ??= (await this.#head(key, 'checking staged bytes'))?.etag;
      if (etag === undefined) throw new CoreError('error.store.unavailable', 'object store: staged bytes vanished');
      const staged = { key, size, sha256: hash.digest('hex'), etag };
      // Sealed last: until then the id's seal names an earlier stage's key (or none), never this one half-written.
      await this.#writeSeal(stagingId, staged);
      kept = true;
      return { size: staged.size, sha256: staged.sha256 };
    } finally {
      // A part still travelling (the body failed or was too large meanwhile) ends before its file
      // is removed and its upload aborted; its own failure is not this stage's outcome.
      await settle().catch(() => undefined);
      for (const r of reads) r.destroy();
      for (const f of spills) {
        await f.handle.close();
        await rm(f.path, { force: true });
      }
      if (!kept) {
        // Neither the unfinished parts nor an earlier staging stay: the upload has nothing staged.
        // Best effort when the store is what failed; the cleanup error must not hide the first one.
        // At once, so a store that is gone costs one timeout here, not one per request.
        const id: string | null = uploadId;
        await Promise.all([
          id === null
            ? undefined
            : this.#client
                .send(new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key: key, UploadId: id }))
                .catch(() => undefined),
          this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key })).catch(() => undefined),
          this.discard(stagingId).catch(() => undefined),
        ]);
      }
    }
  }

  /**
   * `#send`, tried once more on failure: a body streamed from a file cannot be sent again by the
   * SDK's own retry (the stream is spent), so each attempt here builds its request afresh.
   */
  async #sendTwice<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch {
      return this.#send(what, call);
    }
  }

  /**
   * Copies the id's sealed bytes to their content address. The seal (#readSeal) names a key of the
   * server's own under `received/` and the hash taken of its bytes as they were written there
   * (stage) or read there once (#adopt); those bytes are trusted while the key still has the size
   * and ETag they were hashed under, and the copy is pinned to that ETag. Such a key is reached by
   * no URL and written only once, so a client holding its staging URL cannot change it, and only
   * the bucket's own credentials could; a key found changed is hashed again where it is, never
   * trusted. Without a seal, what a client left under `staging/<id>` is taken in and hashed first.
   * An address that already holds bytes of this hash (read back and hashed) is not written; a new
   * one is written with If-None-Match where the store honours it. Nothing is read back after the
   * copy: its source is bytes of this hash that nobody else writes, and a racing commit to the
   * same address copies bytes of the same hash.
   */
  async commit(stagingId: string, contentHash: string): Promise<'stored' | 'hash_mismatch' | 'missing'> {
    const final = this.#blobKey(contentHash);
    let source: Sealed | null = null;
    const seal = await this.#readSeal(stagingId);
    if (seal !== null) {
      const found = await this.#head(seal.key, 'checking staged bytes');
      if (found !== null && found.etag === seal.etag && found.size === seal.size) source = seal;
      else if (found !== null) {
        const again = await this.#hashKey(seal.key, Number.MAX_SAFE_INTEGER);
        source = again === 'too_large' ? null : again;
      }
    }
    if (source === null) {
      const adopted = await this.#adopt(stagingId, Number.MAX_SAFE_INTEGER);
      if (typeof adopted === 'string') return 'missing';
      source = adopted;
    }
    if (source.sha256 !== contentHash) return 'hash_mismatch';
    const there = await this.#digestKey(final, 'checking a content address');
    if (there?.sha256 === contentHash) return 'stored';
    const ifNoneMatch = there === null ? { IfNoneMatch: '*' } : {};
    try {
      if (source.size > this.#copyPartBytes)
        await this.#copyInParts(source.key, final, source.size, source.etag, ifNoneMatch);
      else
        await this.#client.send(
          new CopyObjectCommand({
            Bucket: this.#bucket,
            Key: final,
            CopySource: this.#copySource(source.key),
            CopySourceIfMatch: source.etag,
            ...ifNoneMatch,
          }),
        );
    } catch (e) {
      const inner = ((e as { cause?: unknown }).cause ?? e) as {
        name?: string;
        $metadata?: { httpStatusCode?: number };
      };
      // Another commit wrote the address first: fine if those are these bytes.
      const raced =
        inner?.name === 'PreconditionFailed' ||
        inner?.$metadata?.httpStatusCode === 412 ||
        inner?.$metadata?.httpStatusCode === 409;
      if (!raced)
        throw e instanceof CoreError
          ? e
          : new CoreError('error.store.unavailable', 'object store: copying to the content address failed', {
              cause: e,
              fault: faultOf(e),
            });
      if ((await this.#digestKey(final, 'checking a content address'))?.sha256 !== contentHash) {
        throw new CoreError(
          'error.store.unavailable',
          'object store: the content address was written meanwhile with other bytes',
        );
      }
    }
    return 'stored';
  }

  /** Size and streamed SHA-256 of the object at a content address; null when none is there. */
  digest(contentHash: string): Promise<StagedBlob | null> {
    return this.#digestKey(this.#blobKey(contentHash), 'hashing a blob');
  }

  /** Size and streamed SHA-256 of the object at `key` (never a checksum the store merely keeps); null when none. */
  async #digestKey(key: string, what: string): Promise<StagedBlob | null> {
    let object;
    try {
      object = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }));
    } catch (e) {
      if (isNotFound(e)) return null;
      throw new CoreError('error.store.unavailable', `object store: ${what} failed`, { cause: e, fault: faultOf(e) });
    }
    const hash = createHash('sha256');
    let size = 0;
    await this.#send(what, async () => {
      for await (const chunk of object.Body as AsyncIterable<Uint8Array>) {
        size += chunk.length;
        hash.update(chunk);
      }
    });
    return { size, sha256: hash.digest('hex') };
  }

  /** One object to another key, whole or in parts by size, pinned to `etag` when given. */
  async #copy(from: string, to: string, size: number, etag: string | undefined, what: string): Promise<void> {
    if (size > this.#copyPartBytes) await this.#copyInParts(from, to, size, etag);
    else
      await this.#send(what, () =>
        this.#client.send(
          new CopyObjectCommand({
            Bucket: this.#bucket,
            Key: to,
            CopySource: this.#copySource(from),
            ...(etag ? { CopySourceIfMatch: etag } : {}),
          }),
        ),
      );
  }

  /** Size and ETag of the object at `key`, null when there is none. */
  async #head(key: string, what: string): Promise<{ size: number; etag: string | undefined } | null> {
    try {
      const head = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return { size: head.ContentLength ?? 0, etag: head.ETag };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw new CoreError('error.store.unavailable', `object store: ${what} failed`, { cause: e, fault: faultOf(e) });
    }
  }

  /** A copy whose source vanished (or changed) between its HEAD and the copy. */
  #sourceGone(e: unknown): boolean {
    const err = e as { cause?: unknown };
    const inner = (err?.cause ?? err) as { name?: string; $metadata?: { httpStatusCode?: number } };
    return isNotFound(inner) || inner?.name === 'PreconditionFailed' || inner?.$metadata?.httpStatusCode === 412;
  }

  /**
   * Whether a failed copy of `from` failed because a racing hand-over removed its source: S3 says
   * so with a 404 or a 412, but a store whose objects are files (s3rver, seen in the contract
   * suite) may answer 500 when the file goes mid-copy. Any other answer is asked again: the source
   * gone is the same outcome either way, and a source still there means the failure was real.
   */
  async #copyLostSource(e: unknown, from: string): Promise<boolean> {
    return this.#sourceGone(e) || (await this.#head(from, 'checking a copy source')) === null;
  }

  #quarantinedKey(blob: QuarantinedBlob): string {
    const m = QUARANTINED.exec(blob.id);
    if (m === null || m[1] !== blob.contentHash) throw new RangeError('bad quarantined blob');
    return `${this.#prefix}quarantine/${blob.id}`;
  }

  async quarantine(contentHash: string): Promise<QuarantinedBlob | null> {
    const address = this.#blobKey(contentHash);
    const found = await this.#head(address, 'checking a blob');
    if (found === null) return null;
    const blob = { contentHash, id: `${contentHash}.${randomBytes(8).toString('hex')}` };
    try {
      // Not pinned to the ETag: whatever is at the address has this hash, so the same bytes.
      await this.#copy(address, this.#quarantinedKey(blob), found.size, undefined, 'moving a blob to quarantine');
    } catch (e) {
      if (await this.#copyLostSource(e, address)) return null;
      throw e;
    }
    // From this delete on the address is empty: the point a writer's later check sees (handoff.ts).
    await this.#send('moving a blob to quarantine', () =>
      this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: address })),
    );
    return blob;
  }

  async unquarantine(blob: QuarantinedBlob): Promise<void> {
    const key = this.#quarantinedKey(blob);
    const found = await this.#head(key, 'checking a quarantined blob');
    if (found === null) return;
    try {
      await this.#copy(
        key,
        this.#blobKey(blob.contentHash),
        found.size,
        undefined,
        'putting a blob back from quarantine',
      );
    } catch (e) {
      if (await this.#copyLostSource(e, key)) return;
      throw e;
    }
    await this.dropQuarantined(blob);
  }

  async dropQuarantined(blob: QuarantinedBlob): Promise<void> {
    const key = this.#quarantinedKey(blob);
    await this.#send('dropping a quarantined blob', () =>
      this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key })),
    );
  }

  async *listQuarantined(): AsyncIterable<QuarantinedBlob> {
    yield* this.#quarantinedUnder('');
  }

  /** One listing by the prefix `quarantine/<sha256>.`: the rest of the quarantine is never read. */
  async quarantinedCopies(contentHash: string): Promise<readonly QuarantinedBlob[]> {
    if (!HASH.test(contentHash)) throw new RangeError('bad content hash');
    const out: QuarantinedBlob[] = [];
    for await (const q of this.#quarantinedUnder(`${contentHash}.`)) if (q.contentHash === contentHash) out.push(q);
    return out;
  }

  async *#quarantinedUnder(namePrefix: string): AsyncIterable<QuarantinedBlob> {
    const under = `${this.#prefix}quarantine/`;
    for await (const o of this.#objectsUnder(`${under}${namePrefix}`, 'listing quarantined blobs')) {
      const m = QUARANTINED.exec(o.key.slice(under.length));
      if (m !== null) yield { contentHash: m[1]!, id: m[0] };
    }
  }

  #copySource(key: string): string {
    return `${this.#bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  /** A multipart copy for objects beyond what one CopyObject takes; visible only once completed. */
  async #copyInParts(
    from: string,
    to: string,
    size: number,
    etag: string | undefined,
    complete: { IfNoneMatch?: string } = {},
  ): Promise<void> {
    const created = await this.#send('starting a multipart copy', () =>
      this.#client.send(new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key: to })),
    );
    const uploadId = created.UploadId;
    if (!uploadId) throw new CoreError('error.store.unavailable', 'object store: no multipart upload id');
    try {
      const parts: { PartNumber: number; ETag: string }[] = [];
      for (let start = 0, n = 1; start < size; start += this.#copyPartBytes, n++) {
        const end = Math.min(start + this.#copyPartBytes, size) - 1;
        const part = await this.#send('copying a part', () =>
          this.#client.send(
            new UploadPartCopyCommand({
              Bucket: this.#bucket,
              Key: to,
              UploadId: uploadId,
              PartNumber: n,
              CopySource: this.#copySource(from),
              CopySourceRange: `bytes=${start}-${end}`,
              ...(etag ? { CopySourceIfMatch: etag } : {}),
            }),
          ),
        );
        parts.push({ PartNumber: n, ETag: part.CopyPartResult?.ETag ?? '' });
      }
      await this.#send('completing a multipart copy', () =>
        this.#client.send(
          new CompleteMultipartUploadCommand({
            Bucket: this.#bucket,
            Key: to,
            UploadId: uploadId,
            MultipartUpload: { Parts: parts },
            ...complete,
          }),
        ),
      );
    } catch (e) {
      await this.#client
        .send(new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key: to, UploadId: uploadId }))
        .catch(() => undefined);
      throw e;
    }
  }

  /** The seal and `staging/<id>` first (so no seal names a key that is gone), then every key of the id under `received/`. */
  async discard(stagingId: string): Promise<void> {
    await Promise.all([
      this.#deleteKey(this.#sealKey(stagingId), 'discarding staged bytes'),
      this.#deleteKey(this.#stagedKey(stagingId), 'discarding staged bytes'),
    ]);
    for await (const o of this.#objectsUnder(`${this.#prefix}received/${stagingId}.`, 'listing staged bytes'))
      await this.#deleteKey(o.key, 'discarding staged bytes');
  }

  /** The sealed bytes of the id, else what a client left under `staging/<id>`; null when neither is there. */
  async readStaged(stagingId: string): Promise<AsyncIterable<Uint8Array> | null> {
    const seal = await this.#readSeal(stagingId);
    for (const key of seal === null ? [this.#stagedKey(stagingId)] : [seal.key, this.#stagedKey(stagingId)]) {
      try {
        const object = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }));
        return object.Body as AsyncIterable<Uint8Array>;
      } catch (e) {
        if (isNotFound(e)) continue;
        throw new CoreError('error.store.unavailable', 'object store: reading staged bytes failed', {
          cause: e,
          fault: faultOf(e),
        });
      }
    }
    return null;
  }

  async has(contentHash: string): Promise<boolean> {
    const key = this.#blobKey(contentHash);
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return true;
    } catch (e) {
      // Only a 404 means absent: an unreachable store must not look like a missing blob.
      if (isNotFound(e)) return false;
      throw new CoreError('error.store.unavailable', 'object store: checking a blob failed', {
        cause: e,
        fault: faultOf(e),
      });
    }
  }

  async stat(contentHash: string): Promise<BlobStat | null> {
    const key = this.#blobKey(contentHash);
    try {
      const head = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return { size: head.ContentLength ?? 0 };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw new CoreError('error.store.unavailable', 'object store: checking a blob failed', {
        cause: e,
        fault: faultOf(e),
      });
    }
  }

  async read(contentHash: string, range?: ByteRange): Promise<AsyncIterable<Uint8Array> | null> {
    if (
      range !== undefined &&
      !(
        Number.isSafeInteger(range.start) &&
        Number.isSafeInteger(range.end) &&
        range.start >= 0 &&
        range.start <= range.end
      )
    ) {
      throw new RangeError(`not a byte range: ${range.start}-${range.end}`);
    }
    const key = this.#blobKey(contentHash);
    let object;
    try {
      // Requested before returning, so an absent blob is null here rather than an error mid-stream;
      // the range goes to the store as it is (inclusive ends, as HTTP), so only those bytes travel.
      object = await this.#client.send(
        new GetObjectCommand({
          Bucket: this.#bucket,
          Key: key,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
    } catch (e) {
      if (isNotFound(e)) return null;
      if ((e as { name?: string }).name === 'InvalidRange')
        throw new RangeError(`range ${range?.start}-${range?.end} lies outside the blob`);
      throw new CoreError('error.store.unavailable', 'object store: reading a blob failed', {
        cause: e,
        fault: faultOf(e),
      });
    }
    const body = object.Body as AsyncIterable<Uint8Array> & { destroy?: () => void };
    if (range === undefined) return body;
    // What the store sent, from Content-Range (absent when it ignored Range and sent everything).
    // Stores clamp an end past the object (S3 does), and some serve more than asked: check the
    // range against what came, so a caller is never served short, nor more than it asked for.
    const sent = /^bytes (\d+)-(\d+)\/\d+$/.exec(object.ContentRange ?? '');
    const first = sent ? Number(sent[1]) : 0;
    const last = sent ? Number(sent[2]) : (object.ContentLength ?? 0) - 1;
    if (first > range.start || last < range.end) {
      body.destroy?.();
      throw new RangeError(`range ${range.start}-${range.end} lies outside the blob (the store sent ${first}-${last})`);
    }
    return first === range.start && last === range.end ? body : sliceOf(body, range, first);
  }

  /**
   * The start-up check: writes a small object under `probe/`, reads it back and deletes it, so that
   * missing credentials, an unknown bucket or a policy without one of the three rights stop the
   * start instead of failing the first upload. Throws naming the step that failed and the store's
   * own reason; leaves nothing behind when it succeeds.
   */
  async probe(): Promise<void> {
    const key = `${this.#prefix}probe/${randomBytes(12).toString('hex')}`;
    const body = new TextEncoder().encode(`strongroom start-up probe ${key}`);
    const step = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
      try {
        return await call();
      } catch (cause) {
        throw new Error(`${what} failed: ${describeS3Failure(cause)}`);
      }
    };
    await step('writing a probe object', () =>
      this.#client.send(
        new PutObjectCommand({ Bucket: this.#bucket, Key: key, Body: body, ContentLength: body.length }),
      ),
    );
    const back = await step('reading it back', async () => {
      const object = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }));
      const chunks: Uint8Array[] = [];
      for await (const chunk of object.Body as AsyncIterable<Uint8Array>) chunks.push(chunk);
      return Buffer.concat(chunks);
    });
    if (!back.equals(body)) throw new Error('reading it back failed: the object read is not the object written');
    await step('deleting it', () => this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key })));
  }

  async remove(contentHash: string): Promise<void> {
    const key = this.#blobKey(contentHash);
    // S3 answers a delete of an absent key with success: removing twice is harmless.
    await this.#send('removing a blob', () =>
      this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key })),
    );
  }

  stream(contentHash: string): Promise<AsyncIterable<Uint8Array> | null> {
    return this.read(contentHash);
  }

  /** The object store keeps its objects durably itself: a backup lists them rather than copying. */
  readonly backupMode = 'manifest';

  /**
   * The objects under `<prefix>blobs/`, page by page (ListObjectsV2 answers keys in ascending
   * order, so content addresses come in hash order); keys that are not a content address are skipped.
   */
  async *list(): AsyncIterable<ListedBlob> {
    const under = `${this.#prefix}blobs/`;
    for await (const o of this.#objectsUnder(under, 'listing blobs')) {
      const hash = o.key.slice(under.length + 3);
      if (HASH.test(hash) && o.key === this.#blobKey(hash)) yield { contentHash: hash, size: o.size };
    }
  }

  /**
   * Staged ids: the objects under `<prefix>staging/` (a direct PUT's included, whatever became of
   * its session) and the ids of the keys and seals under `<prefix>received/`, each once.
   */
  async *listStaged(): AsyncIterable<string> {
    const seen = new Set<string>();
    for (const [under, idOf] of [
      [`${this.#prefix}staging/`, (name: string) => (SAFE_ID.test(name) ? name : null)],
      [`${this.#prefix}received/`, (name: string) => RECEIVED_NAME.exec(name)?.[1] ?? null],
    ] as const) {
      for await (const o of this.#objectsUnder(under, 'listing staged uploads')) {
        const id = idOf(o.key.slice(under.length));
        if (id !== null && !seen.has(id)) {
          seen.add(id);
          yield id;
        }
      }
    }
  }

  /** Every object under `prefix`, a page at a time. */
  async *#objectsUnder(prefix: string, what: string): AsyncIterable<{ key: string; size: number }> {
    let token: string | undefined;
    do {
      const command = new ListObjectsV2Command({
        Bucket: this.#bucket,
        Prefix: prefix,
        ...(token ? { ContinuationToken: token } : {}),
      });
      this.#bucketPath(command);
      const page = await this.#send(what, () => this.#client.send(command));
      for (const o of page.Contents ?? []) yield { key: o.Key ?? '', size: o.Size ?? 0 };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /**
   * Path-style bucket requests (listings) go out as `/bucket?...`, the form S3 has always taken (the
   * SDK's `/bucket/` is refused by s3rver's signature check, which follows the older SDK's form).
   */
  #bucketPath(command: { middlewareStack: ListObjectsV2Command['middlewareStack'] }): void {
    command.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { path?: string };
        if (request.path === `/${this.#bucket}/`) request.path = `/${this.#bucket}`;
        return next(args);
      },
      { step: 'build', name: 'strongroomBucketPath' },
    );
  }

  /** Closes the client's connections. */
  close(): void {
    this.#client.destroy();
  }
}

/**
 * A request whose body the signature does not cover (`x-amz-content-sha256: UNSIGNED-PAYLOAD`):
 * the SDK would otherwise hash every staged byte once more to sign it, beside the hash stage
 * computes. The body reaches the store over the client's connection as it was hashed (TLS keeps
 * it whole on any endpoint but loopback), and lands in a key only this server writes.
 */
function unsignedPayload<C extends UploadPartCommand | PutObjectCommand>(command: C): C {
  (command as UploadPartCommand).middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string> };
      if (request.headers) request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
      return next(args);
    },
    { step: 'build', name: 'strongroomUnsignedPayload' },
  );
  return command;
}

/**
 * How many received bytes stage gathers before it writes them to the part's file: four of a
 * socket's 64 KiB chunks. A resumable upload's runs are read back from the bucket as fast as it
 * answers, twenty uploads at once all gathering at full speed: with 1 MiB batches the server's
 * peak resident set grew 109 and 124 MiB over twenty 64 MiB tus uploads at once on s3rver, with
 * 256 KiB 58 and 61 MiB, chunks already written being freed only at the next collection.
 */
const SPILL_BATCH_BYTES = 256 * 1024;

/** A file a part waits in while it fills, and how many bytes of it are the part's. */
interface PartFile {
  readonly path: string;
  readonly handle: FileHandle;
  length: number;
}

/** Writes `chunks` in order at `position`, whole: one writev, then the rest of any chunk it cut short. */
async function writeAllAt(file: FileHandle, chunks: Uint8Array[], position: number): Promise<void> {
  let written = (await file.writev(chunks, position)).bytesWritten;
  let at = position;
  for (const chunk of chunks) {
    if (written >= chunk.length) {
      written -= chunk.length;
      at += chunk.length;
      continue;
    }
    for (let off = written; off < chunk.length; )
      off += (await file.write(chunk, off, chunk.length - off, at + off)).bytesWritten;
    at += chunk.length;
    written = 0;
  }
}

/** The inclusive `range` of a stream whose first byte is the blob's byte `offset`. */
async function* sliceOf(body: AsyncIterable<Uint8Array>, range: ByteRange, offset: number): AsyncIterable<Uint8Array> {
  let at = offset;
  for await (const chunk of body) {
    const from = Math.max(range.start - at, 0);
    const to = Math.min(range.end + 1 - at, chunk.length);
    if (from < to) yield chunk.subarray(from, to);
    at += chunk.length;
    if (at > range.end) return;
  }
}

/** An S3 failure in one line: the SDK's error name and message (never a request, which holds signatures). */
/**
 * What a failed call says about the store: no answer at all (refused, reset, timed out, unknown
 * host: the SDK got no HTTP status), an answer refusing these credentials (none in the SDK's
 * chain, or 401/403: a wrong key, a signature mismatch, a policy without the right), or some
 * other answer.
 */
function faultOf(cause: unknown): StoreFault {
  const e = cause as { name?: string; $metadata?: { httpStatusCode?: number } };
  if (e?.name === 'CredentialsProviderError') return 'credentials';
  const status = e?.$metadata?.httpStatusCode;
  if (status === 401 || status === 403) return 'credentials';
  return status === undefined ? 'unreachable' : 'failed';
}

function describeS3Failure(cause: unknown): string {
  const e = cause as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  if (e?.name === 'CredentialsProviderError')
    return 'no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)';
  const status = e?.$metadata?.httpStatusCode;
  return `${e?.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}: ${e?.message ?? String(cause)}`;
}
