import { createHash } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { CoreError, type BlobStat, type BlobStore, type ByteRange, type StagedBlob } from '@strongroom/core';

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;
const HASH = /^[0-9a-f]{64}$/;
const MiB = 1024 * 1024;

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
   * up to this size is one PUT, a larger one a multipart upload, so at most one part is in memory.
   */
  readonly partBytes?: number;
  /** Objects larger than this are copied to their content address part by part (S3 copies at most 5 GiB at once). */
  readonly copyPartBytes?: number;
  /** Replaces the client built from the options (tests). */
  readonly client?: S3Client;
}

/** The SDK's answer for a key that is not there (GET says NoSuchKey, HEAD only a 404). */
function isNotFound(e: unknown): boolean {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return err?.name === 'NoSuchKey' || err?.name === 'NotFound' || err?.$metadata?.httpStatusCode === 404;
}

/**
 * Content-addressed blobs in an S3-compatible bucket: `<prefix>/staging/<id>` while an upload is
 * received, `<prefix>/blobs/<2 hex>/<sha256>` once committed. A staged object appears only whole
 * (a single PUT, or a multipart upload that becomes visible only when completed), and is copied to
 * its content address only after its bytes, read back from the store, hash to the claimed SHA-256;
 * so a crash, an oversize or failed body, or a wrong hash leaves nothing under a content address.
 * Any failure to reach the store is a CoreError `error.store.unavailable` (503), never taken for
 * an absent object.
 */
export class S3BlobStore implements BlobStore {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #partBytes: number;
  readonly #copyPartBytes: number;

  constructor(options: S3BlobStoreOptions) {
    this.#bucket = options.bucket;
    const prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '');
    this.#prefix = prefix === '' ? '' : `${prefix}/`;
    this.#partBytes = Math.max(options.partBytes ?? 8 * MiB, 5 * MiB);
    this.#copyPartBytes = options.copyPartBytes ?? 5 * 1024 * MiB;
    const timeoutMs = options.timeoutMs ?? 10_000;
    const config: S3ClientConfig = {
      region: options.region ?? 'us-east-1',
      forcePathStyle: options.forcePathStyle ?? false,
      maxAttempts: options.maxAttempts ?? 2,
      requestHandler: { connectionTimeout: Math.ceil(timeoutMs / 3), requestTimeout: timeoutMs, throwOnRequestTimeout: true },
      // Only the checksums an operation requires: not every S3-compatible store accepts the
      // newer default CRC32 trailers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: { ...options.credentials } } : {}),
    };
    this.#client = options.client ?? new S3Client(config);
  }

  #stagedKey(id: string): string {
    if (!SAFE_ID.test(id)) throw new RangeError('bad staging id');
    return `${this.#prefix}staging/${id}`;
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
      throw new CoreError('error.store.unavailable', `object store: ${what} failed`, { cause });
    }
  }

  async stage(stagingId: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StagedBlob | null> {
    const key = this.#stagedKey(stagingId);
    const hash = createHash('sha256');
    let size = 0;
    let buffered: Uint8Array[] = [];
    let bufferedBytes = 0;
    let uploadId: string | null = null;
    const parts: { PartNumber: number; ETag: string }[] = [];
    const flushPart = async (): Promise<void> => {
      if (uploadId === null) {
        const created = await this.#send('starting a multipart upload', () => this.#client.send(new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key: key })));
        uploadId = created.UploadId ?? null;
        if (uploadId === null) throw new CoreError('error.store.unavailable', 'object store: no multipart upload id');
      }
      const partNumber = parts.length + 1;
      const data = Buffer.concat(buffered, bufferedBytes);
      buffered = [];
      bufferedBytes = 0;
      const id = uploadId;
      const sent = await this.#send('uploading a part', () => this.#client.send(new UploadPartCommand({ Bucket: this.#bucket, Key: key, UploadId: id, PartNumber: partNumber, Body: data, ContentLength: data.length })));
      parts.push({ PartNumber: partNumber, ETag: sent.ETag ?? '' });
    };
    let kept = false;
    try {
      for await (const chunk of body) {
        size += chunk.length;
        if (size > maxBytes) return null;
        hash.update(chunk);
        // Copied: the body may reuse its buffer for the next chunk.
        buffered.push(Buffer.from(chunk));
        bufferedBytes += chunk.length;
        if (bufferedBytes >= this.#partBytes) await flushPart();
      }
      if (uploadId === null) {
        const data = Buffer.concat(buffered, bufferedBytes);
        await this.#send('storing staged bytes', () => this.#client.send(new PutObjectCommand({ Bucket: this.#bucket, Key: key, Body: data, ContentLength: data.length })));
      } else {
        if (bufferedBytes > 0) await flushPart();
        const id: string = uploadId;
        await this.#send('completing a multipart upload', () =>
          this.#client.send(new CompleteMultipartUploadCommand({ Bucket: this.#bucket, Key: key, UploadId: id, MultipartUpload: { Parts: parts } })),
        );
      }
      kept = true;
    } finally {
      if (!kept) {
        // Neither the unfinished parts nor an earlier staging stay: the upload has nothing staged.
        // Best effort when the store is what failed; the cleanup error must not hide the first one.
        const id: string | null = uploadId;
        if (id !== null) await this.#client.send(new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key: key, UploadId: id })).catch(() => undefined);
        await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key })).catch(() => undefined);
      }
    }
    return { size, sha256: hash.digest('hex') };
  }

  async commit(stagingId: string, contentHash: string): Promise<'stored' | 'hash_mismatch' | 'missing'> {
    const staged = this.#stagedKey(stagingId);
    const final = this.#blobKey(contentHash);
    // The bytes are read back and hashed here rather than trusted from staging: what sits under
    // the staging key is what gets copied, whoever wrote it.
    let object;
    try {
      object = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: staged }));
    } catch (e) {
      if (isNotFound(e)) return 'missing';
      throw new CoreError('error.store.unavailable', 'object store: reading staged bytes failed', { cause: e });
    }
    const hash = createHash('sha256');
    await this.#send('reading staged bytes', async () => {
      for await (const chunk of object.Body as AsyncIterable<Uint8Array>) hash.update(chunk);
    });
    if (hash.digest('hex') !== contentHash) return 'hash_mismatch';
    // Same hash, same bytes: copying over an existing blob is harmless, and a copy appears whole.
    const size = object.ContentLength ?? 0;
    if (size > this.#copyPartBytes) await this.#copyInParts(staged, final, size, object.ETag);
    else await this.#send('copying to the content address', () => this.#client.send(new CopyObjectCommand({ Bucket: this.#bucket, Key: final, CopySource: this.#copySource(staged), ...(object.ETag ? { CopySourceIfMatch: object.ETag } : {}) })));
    await this.#send('removing staged bytes', () => this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: staged })));
    return 'stored';
  }

  #copySource(key: string): string {
    return `${this.#bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  /** A multipart copy for objects beyond what one CopyObject takes; visible only once completed. */
  async #copyInParts(from: string, to: string, size: number, etag: string | undefined): Promise<void> {
    const created = await this.#send('starting a multipart copy', () => this.#client.send(new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key: to })));
    const uploadId = created.UploadId;
    if (!uploadId) throw new CoreError('error.store.unavailable', 'object store: no multipart upload id');
    try {
      const parts: { PartNumber: number; ETag: string }[] = [];
      for (let start = 0, n = 1; start < size; start += this.#copyPartBytes, n++) {
        const end = Math.min(start + this.#copyPartBytes, size) - 1;
        const part = await this.#send('copying a part', () =>
          this.#client.send(
            new UploadPartCopyCommand({ Bucket: this.#bucket, Key: to, UploadId: uploadId, PartNumber: n, CopySource: this.#copySource(from), CopySourceRange: `bytes=${start}-${end}`, ...(etag ? { CopySourceIfMatch: etag } : {}) }),
          ),
        );
        parts.push({ PartNumber: n, ETag: part.CopyPartResult?.ETag ?? '' });
      }
      await this.#send('completing a multipart copy', () => this.#client.send(new CompleteMultipartUploadCommand({ Bucket: this.#bucket, Key: to, UploadId: uploadId, MultipartUpload: { Parts: parts } })));
    } catch (e) {
      await this.#client.send(new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key: to, UploadId: uploadId })).catch(() => undefined);
      throw e;
    }
  }

  async discard(stagingId: string): Promise<void> {
    const key = this.#stagedKey(stagingId);
    await this.#send('discarding staged bytes', () => this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key })));
  }

  async has(contentHash: string): Promise<boolean> {
    const key = this.#blobKey(contentHash);
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return true;
    } catch (e) {
      // Only a 404 means absent: an unreachable store must not look like a missing blob.
      if (isNotFound(e)) return false;
      throw new CoreError('error.store.unavailable', 'object store: checking a blob failed', { cause: e });
    }
  }

  async stat(contentHash: string): Promise<BlobStat | null> {
    const key = this.#blobKey(contentHash);
    try {
      const head = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return { size: head.ContentLength ?? 0 };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw new CoreError('error.store.unavailable', 'object store: checking a blob failed', { cause: e });
    }
  }

  async read(contentHash: string, range?: ByteRange): Promise<AsyncIterable<Uint8Array> | null> {
    if (range !== undefined && !(Number.isSafeInteger(range.start) && Number.isSafeInteger(range.end) && range.start >= 0 && range.start <= range.end)) {
      throw new RangeError(`not a byte range: ${range.start}-${range.end}`);
    }
    const key = this.#blobKey(contentHash);
    let object;
    try {
      // Requested before returning, so an absent blob is null here rather than an error mid-stream;
      // the range goes to the store as it is (inclusive ends, as HTTP), so only those bytes travel.
      object = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }));
    } catch (e) {
      if (isNotFound(e)) return null;
      if ((e as { name?: string }).name === 'InvalidRange') throw new RangeError(`range ${range?.start}-${range?.end} lies outside the blob`);
      throw new CoreError('error.store.unavailable', 'object store: reading a blob failed', { cause: e });
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

  async remove(contentHash: string): Promise<void> {
    const key = this.#blobKey(contentHash);
    // S3 answers a delete of an absent key with success: removing twice is harmless.
    await this.#send('removing a blob', () => this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key })));
  }

  stream(contentHash: string): Promise<AsyncIterable<Uint8Array> | null> {
    return this.read(contentHash);
  }

  /** The object store keeps its objects durably itself: a backup lists them rather than copying. */
  readonly backupMode = 'manifest';

  /** Closes the client's connections. */
  close(): void {
    this.#client.destroy();
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
