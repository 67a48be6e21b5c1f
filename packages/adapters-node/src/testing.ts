import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import S3rver from '@20minutes/s3rver';

/** s3rver's built-in account; it checks every request's SigV4 signature against this secret. */
export const S3RVER_KEY = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

/**
 * Puts s3rver's key where the SDK's standard credential chain finds it (this process's
 * environment) and answers a function that puts back what was there. Test files share a process,
 * so whatever a file sets it must undo.
 */
export function useS3rverCredentials(): () => void {
  const saved = {
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY,
  };
  process.env.AWS_ACCESS_KEY_ID = S3RVER_KEY.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = S3RVER_KEY.secretAccessKey;
  return () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

/**
 * What s3rver (4.0) lacks of S3's multipart API, added to it: ListMultipartUploads (GET
 * `/bucket?uploads`), ListParts (GET `/bucket/key?uploadId=`) and AbortMultipartUpload (DELETE
 * `/bucket/key?uploadId=`). It has CreateMultipartUpload, UploadPart, UploadPartCopy and
 * CompleteMultipartUpload itself, but takes a part for any upload id (completed, aborted or never
 * made, under any key): here, as on S3, such a part is 404 NoSuchUpload. The three answer from s3rver's own upload directory (a folder
 * per upload: its key, and each part's bytes beside a `.md5` written once the part was whole), and
 * run after s3rver's signature check, so a request signed wrong is refused as any other. Like
 * s3rver, they check no part checksum. Added once to s3rver's router, which every instance in the
 * process shares.
 */
let multipartAdded = false;
function addMultipartListing(): void {
  if (multipartAdded) return;
  multipartAdded = true;
  const require = createRequire(import.meta.url);
  const router = require('@20minutes/s3rver/lib/routes.js') as {
    use(path: string, mw: (ctx: S3rverContext, next: () => Promise<void>) => Promise<void>): void;
    stack: { stack: { name?: string }[] }[];
  };
  const S3Error = require('@20minutes/s3rver/lib/models/error.js') as new (
    code: string,
    message: string,
    detail?: Record<string, string>,
  ) => Error;
  router.use('/:bucket/:key*', async (ctx, next) => {
    const q = ctx.query;
    const [, bucket = '', ...rest] = ctx.path.split('/');
    const key = decodeURIComponent(rest.join('/'));
    const dir = ctx.store.getResourcePath(bucket, undefined, 'uploads');
    const uploadKey = async (id: string): Promise<string | null> =>
      /^[0-9a-f]+$/.test(id) ? await readFile(join(dir, id, 'key'), 'utf8').catch(() => null) : null;
    const noSuchUpload = () =>
      new S3Error('NoSuchUpload', 'The specified upload does not exist.', { UploadId: String(q.uploadId) });
    if (ctx.method === 'GET' && key === '' && 'uploads' in q) {
      const prefix = typeof q.prefix === 'string' ? q.prefix : '';
      const ids = await readdir(dir).catch(() => [] as string[]);
      const uploads = [];
      for (const id of ids) {
        const k = await uploadKey(id);
        if (k === null || !k.startsWith(prefix)) continue;
        const at = (await stat(join(dir, id, 'key'))).mtime;
        uploads.push({ Key: k, UploadId: id, Initiated: at.toISOString(), StorageClass: 'STANDARD' });
      }
      uploads.sort((a, b) => (a.Key < b.Key ? -1 : a.Key > b.Key ? 1 : a.UploadId < b.UploadId ? -1 : 1));
      ctx.body = {
        ListMultipartUploadsResult: { Bucket: bucket, Prefix: prefix, IsTruncated: false, Upload: uploads },
      };
      return;
    }
    // S3 takes a part only for an upload still open under that key; s3rver would make a new folder for it.
    if (ctx.method === 'PUT' && key !== '' && typeof q.uploadId === 'string') {
      if ((await uploadKey(q.uploadId)) !== key) throw noSuchUpload();
      return next();
    }
    if ((ctx.method === 'GET' || ctx.method === 'DELETE') && key !== '' && typeof q.uploadId === 'string') {
      if (ctx.method === 'GET' && 'partNumber' in q) return next();
      if ((await uploadKey(q.uploadId)) !== key) throw noSuchUpload();
      const at = join(dir, q.uploadId);
      if (ctx.method === 'DELETE') {
        await rm(at, { recursive: true, force: true });
        ctx.status = 204;
        return;
      }
      const names = await readdir(at);
      const parts = [];
      for (const name of names.filter((n) => /^\d+$/.test(n)).sort((a, b) => Number(a) - Number(b))) {
        // A part whose bytes never finished has no .md5 yet: S3 would not list it.
        const md5 = await readFile(join(at, `${name}.md5`), 'utf8').catch(() => null);
        if (md5 === null) continue;
        const info = await stat(join(at, name));
        parts.push({
          PartNumber: Number(name),
          ETag: `"${md5}"`,
          Size: info.size,
          LastModified: info.mtime.toISOString(),
        });
      }
      ctx.body = {
        ListPartsResult: { Bucket: bucket, Key: key, UploadId: q.uploadId, IsTruncated: false, Part: parts },
      };
      return;
    }
    return next();
  });
  // Right after the signature check, before s3rver's own routes refuse these calls.
  const mine = router.stack.pop()!;
  const auth = router.stack.findIndex((layer) => layer.stack.some((fn) => fn.name === 'authentication'));
  router.stack.splice(auth + 1, 0, mine);
}

interface S3rverContext {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  status: number;
  body: unknown;
  store: { getResourcePath(bucket: string, key: string | undefined, resource: string): string };
}

export interface TestS3 {
  /** `http://127.0.0.1:<port>`; buckets are addressed path-style. */
  readonly endpoint: string;
  readonly bucket: string;
  /** The keys of the objects under `prefix`, read from the server's own directory. */
  keys(prefix: string): Promise<string[]>;
  /** Stops the server (idempotent) and removes its directory. */
  stop(): Promise<void>;
}

/**
 * s3rver keeps each key as three files (the bytes, their MD5, the metadata) in a folder per
 * `/`-separated prefix, and writes and reads them in place, a file at a time. S3 answers each
 * request as if it were alone: a read meets the old object or the new one, whole, and a listing
 * never fails because a key went while it was listed. The double is brought to that here, in
 * s3rver's filesystem store, so that tests of the S3 store meet S3's faults and not the double's:
 *
 * - A put wrote the key's file in place: a read opened while it was written got the old length
 *   from `stat` and fewer bytes, and the answer never ended (a GET beside PUTs of the same key:
 *   3 of 100 hung). Now the bytes go to a file of their own, and the key's three files are
 *   replaced by renames, one key at a time; a read opens its file under the same turn, and an open
 *   file keeps its bytes after a rename.
 * - A delete removed the folders it left empty: two deletes under one prefix at once raced that
 *   clean-up (the second found the folder gone), and a put could lose its folder between making it
 *   and writing into it (20 deletes at once under one prefix: 4 to 9 of 2,000 refused). Now a delete
 *   removes the key's files and leaves the folders, as S3's flat keys would.
 * - A listing reads a folder, then `stat`s each name in it: a name whose file went in between
 *   failed the whole listing. Now such a listing is read again.
 *
 * Each of these was a 500 InternalError, or an answer that never ended, that S3 never gives.
 */
let faithful = false;
function faithfulFilesystemStore(): void {
  if (faithful) return;
  faithful = true;
  const require = createRequire(import.meta.url);
  type Metadata = Record<string, string | number>;
  type Store = {
    getResourcePath(bucket: string, key: string, resourceType: string): string;
    getMetadata(bucket: string, key: string): Promise<Metadata>;
    putMetadata(bucket: string, key: string, metadata: Metadata, md5?: string): Promise<void>;
    putContent(path: string, content: unknown): Promise<[number, string]>;
    listObjects(bucket: string, options: unknown): Promise<unknown>;
  };
  const FilesystemStore = require('@20minutes/s3rver/lib/stores/filesystem.js') as { prototype: Store };
  const S3Object = require('@20minutes/s3rver/lib/models/object.js') as {
    new (bucket: string, key: string, content: unknown, metadata: Metadata): { range?: { start: number; end: number } };
    ALLOWED_METADATA: string[];
  };
  const store = FilesystemStore.prototype as Store & Record<string, unknown>;
  // s3rver's own, called inside a key's turn where the replacements would wait on themselves.
  const original = { getMetadata: store.getMetadata, listObjects: store.listObjects };

  // One turn at a time per key. A call takes its place in every key's queue at once, so two copies
  // between the same keys in opposite directions cannot wait on each other.
  const queues = new Map<string, Promise<void>>();
  const inTurn = async <T>(keys: string[], run: () => Promise<T>): Promise<T> => {
    const names = [...new Set(keys)];
    const before = names.map((n) => queues.get(n) ?? Promise.resolve());
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    for (const n of names) queues.set(n, mine);
    await Promise.all(before);
    try {
      return await run();
    } finally {
      done();
      for (const n of names) if (queues.get(n) === mine) queues.delete(n);
    }
  };
  let spare = 0;
  const spareName = (path: string) => `${path}.${process.pid}-${++spare}.partial`;
  // A file written beside its place and renamed onto it: a reader meets the old file or the new.
  const replace = async (path: string, data: string): Promise<void> => {
    const next = spareName(path);
    await writeFile(next, data);
    await rename(next, path);
  };

  store.putMetadata = async function (bucket: string, key: string, metadata: Metadata, md5?: string): Promise<void> {
    const json = JSON.stringify(
      Object.fromEntries(
        Object.entries(metadata).filter(
          ([name]) => S3Object.ALLOWED_METADATA.includes(name) || name.startsWith('x-amz-meta-'),
        ),
      ),
    );
    if (md5) await replace(this.getResourcePath(bucket, key, 'object.md5'), md5);
    await replace(this.getResourcePath(bucket, key, 'metadata.json'), json);
  };
  store.getMetadata = function (this: Store, bucket: string, key: string): Promise<Metadata> {
    return inTurn([`${bucket}/${key}`], () => original.getMetadata.call(this, bucket, key));
  };
  store.putObject = async function (
    this: Store,
    object: { bucket: string; key: string; content: unknown; metadata: Metadata },
  ): Promise<{ size: number; md5: string }> {
    const path = this.getResourcePath(object.bucket, object.key, 'object');
    await mkdir(dirname(path), { recursive: true });
    const next = spareName(path);
    try {
      // A browser's form upload arrives whole; s3rver's own write of it answers before it is written.
      const content = object.content;
      const [size, md5] = Buffer.isBuffer(content)
        ? await writeFile(next, content).then((): [number, string] => [
            content.length,
            createHash('md5').update(content).digest('hex'),
          ])
        : await this.putContent(next, content);
      await inTurn([`${object.bucket}/${object.key}`], async () => {
        await rename(next, path);
        await this.putMetadata(object.bucket, object.key, object.metadata, md5);
      });
      return { size, md5 };
    } finally {
      await rm(next, { force: true });
    }
  };
  store.getObject = function (
    this: Store,
    bucket: string,
    key: string,
    options?: { start?: number; end?: number },
  ): Promise<unknown> {
    return inTurn([`${bucket}/${key}`], async () => {
      let metadata: Metadata;
      try {
        metadata = await original.getMetadata.call(this, bucket, key);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
      const lastByte = Math.max(0, Number(metadata['content-length']) - 1);
      const ranged = options !== undefined && (options.start !== undefined || options.end !== undefined);
      const range = { start: options?.start ?? 0, end: Math.min(options?.end ?? Number.POSITIVE_INFINITY, lastByte) };
      let content: unknown = null;
      if (range.start >= 0 && range.start <= range.end) {
        // Opened in this key's turn: a put after it renames a new file onto the path, and this one
        // goes on reading the bytes it opened.
        content = await new Promise((resolve, reject) => {
          const stream = createReadStream(this.getResourcePath(bucket, key, 'object'), range)
            .on('error', reject)
            .on('open', () => resolve(stream));
        }).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return undefined;
          throw err;
        });
        if (content === undefined) return null;
      }
      const found = new S3Object(bucket, key, content, metadata);
      if (ranged) found.range = range;
      return found;
    });
  };
  store.copyObject = function (
    this: Store,
    srcBucket: string,
    srcKey: string,
    destBucket: string,
    destKey: string,
    replacementMetadata?: Metadata,
  ): Promise<Metadata> {
    return inTurn([`${srcBucket}/${srcKey}`, `${destBucket}/${destKey}`], async () => {
      const from = (resource: string) => this.getResourcePath(srcBucket, srcKey, resource);
      const to = (resource: string) => this.getResourcePath(destBucket, destKey, resource);
      if (from('object') !== to('object')) {
        await mkdir(dirname(to('object')), { recursive: true });
        const next = spareName(to('object'));
        try {
          await copyFile(from('object'), next);
          await rename(next, to('object'));
        } finally {
          await rm(next, { force: true });
        }
      }
      if (replacementMetadata) {
        await this.putMetadata(destBucket, destKey, replacementMetadata);
      } else if (from('object') !== to('object')) {
        for (const resource of ['object.md5', 'metadata.json'])
          await replace(to(resource), await readFile(from(resource), 'utf8'));
      }
      return original.getMetadata.call(this, destBucket, destKey);
    });
  };
  store.deleteObject = function (this: Store, bucket: string, key: string): Promise<void> {
    return inTurn([`${bucket}/${key}`], async () => {
      await Promise.all(
        ['object', 'object.md5', 'metadata.json'].map((type) =>
          rm(this.getResourcePath(bucket, key, type), { force: true }),
        ),
      );
    });
  };
  store.listObjects = async function (this: Store, bucket: string, options: unknown): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await original.listObjects.call(this, bucket, options);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 20) throw err;
      }
    }
  };
}

/**
 * A real S3 wire-protocol server (@20minutes/s3rver) on a loopback port, with one empty bucket.
 * It refuses a request whose SigV4 signature does not match its key (403 SignatureDoesNotMatch).
 */
export async function startTestS3(
  bucket = 'strongroom-test',
  options: { readonly cors?: CorsRule[] } = {},
): Promise<TestS3> {
  addMultipartListing();
  faithfulFilesystemStore();
  const directory = await mkdtemp(join(tmpdir(), 's3rver-'));
  const configs = options.cors === undefined ? [] : [corsXml(options.cors)];
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory,
    silent: true,
    configureBuckets: [{ name: bucket, configs }],
  });
  const { port } = await server.run();
  // Node's default of 5 s closes a kept-alive connection while the SDK may be sending its next
  // request on it: the request fails (ECONNRESET), and a streamed body cannot be sent again by the
  // SDK. Twenty uploads at once took such sockets together from the SDK's pool about 5 s after the
  // previous test left them idle, and met 503s. S3 keeps idle connections open for longer than the
  // SDK keeps them; here they stay open for the life of the server, as no test idles that long.
  (server as unknown as { httpServer: { keepAliveTimeout: number } }).httpServer.keepAliveTimeout = 600_000;
  let stopped = false;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    // Read from disk: s3rver's bucket listing refuses the SDK's signature for path-style bucket
    // requests (object requests are signed and checked fine).
    keys: async (prefix) => {
      const root = join(directory, bucket);
      const entries = await readdir(root, { recursive: true, withFileTypes: true });
      return entries
        .filter((e) => e.isFile() && e.name.endsWith('._S3rver_object'))
        .map((e) =>
          join(e.parentPath, e.name)
            .slice(root.length + 1)
            .replace(/\._S3rver_object$/, ''),
        )
        .filter((k) => k.startsWith(prefix))
        .sort();
    },
    stop: async () => {
      if (!stopped) {
        stopped = true;
        await server.close();
      }
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** One rule of a bucket's CORS configuration, as `aws s3api put-bucket-cors` takes it (JSON). */
export interface CorsRule {
  readonly AllowedOrigins: readonly string[];
  readonly AllowedMethods: readonly string[];
  readonly AllowedHeaders?: readonly string[];
  readonly ExposeHeaders?: readonly string[];
  readonly MaxAgeSeconds?: number;
}

/** The same rules as S3's XML (what s3rver reads from its bucket configs). */
function corsXml(rules: readonly CorsRule[]): string {
  const esc = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const each = (tag: string, values: readonly string[] = []) =>
    values.map((v) => `<${tag}>${esc(v)}</${tag}>`).join('');
  const body = rules
    .map(
      (r) =>
        `<CORSRule>${each('AllowedOrigin', r.AllowedOrigins)}${each('AllowedMethod', r.AllowedMethods)}${each('AllowedHeader', r.AllowedHeaders)}${each('ExposeHeader', r.ExposeHeaders)}${r.MaxAgeSeconds === undefined ? '' : `<MaxAgeSeconds>${r.MaxAgeSeconds}</MaxAgeSeconds>`}</CORSRule>`,
    )
    .join('');
  return `<CORSConfiguration>${body}</CORSConfiguration>`;
}

/** A TCP relay in front of a test server, to make it unreachable or silent on demand. */
export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: use it as the store's endpoint. */
  readonly endpoint: string;
  /** Relays bytes both ways (the start state). */
  up(): void;
  /** Cuts every open connection and resets new ones at once: the store is down. */
  down(): void;
  /** Accepts connections and never relays a byte: the store is slow past any timeout. */
  hang(): void;
  /** Bytes relayed toward the store since the proxy started: a test waits on it, not on a clock. */
  relayedUp(): number;
  /**
   * Cuts the next connection whose request starts with bytes containing `marker` (a request line,
   * such as `partNumber=2`) once `bytes` of it have been relayed to the store: a transfer dropped
   * midway. Resolves when it was cut.
   */
  cutAfter(marker: string, bytes: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const url = new URL(target);
  const open = new Set<Socket>();
  let mode: 'up' | 'down' | 'hang' = 'up';
  let relayedUp = 0;
  const cuts: { marker: string; bytes: number; done: () => void }[] = [];
  const track = (s: Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => undefined);
  };
  const server: Server = createServer((client) => {
    track(client);
    if (mode === 'down') return void client.destroy();
    if (mode === 'hang') return;
    const upstream = connect(Number(url.port), url.hostname);
    track(upstream);
    let sent = 0;
    let armed: (typeof cuts)[number] | null = null;
    let first = true;
    const relay = (chunk: Buffer) => {
      relayedUp += chunk.length;
      if (!upstream.write(chunk)) {
        client.pause();
        upstream.once('drain', () => client.resume());
      }
    };
    client.on('data', (chunk: Buffer) => {
      if (first) {
        first = false;
        const head = chunk.subarray(0, 4096).toString('latin1');
        const at = cuts.findIndex((c) => head.includes(c.marker));
        if (at >= 0) armed = cuts.splice(at, 1)[0]!;
      }
      if (armed === null) return relay(chunk);
      const room = armed.bytes - sent;
      if (chunk.length < room) {
        sent += chunk.length;
        return relay(chunk);
      }
      const cut = armed;
      relayedUp += room;
      upstream.write(chunk.subarray(0, room), () => {
        client.destroy();
        upstream.destroy();
        cut.done();
      });
      armed = null;
      client.pause();
    });
    upstream.pipe(client);
    // Ended, not destroyed: an answer the store sent before closing (a refusal it gave without
    // reading the body) still reaches the client.
    upstream.on('close', () => client.end());
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const cut = () => {
    for (const s of open) s.destroy();
  };
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    up: () => {
      mode = 'up';
    },
    down: () => {
      mode = 'down';
      cut();
    },
    hang: () => {
      mode = 'hang';
      cut();
    },
    relayedUp: () => relayedUp,
    cutAfter: (marker, bytes) => new Promise<void>((done) => cuts.push({ marker, bytes, done })),
    close: async () => {
      cut();
      await new Promise((r) => server.close(r));
    },
  };
}

/** One S3 request as an intercepting proxy saw it (path-style addressing). */
export interface SeenS3Request {
  readonly method: string;
  /** The object key, decoded (without the bucket); "" for a bucket request. */
  readonly key: string;
  /** A copy's source key (x-amz-copy-source, decoded, without the bucket), else null. */
  readonly copySource: string | null;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/**
 * An HTTP proxy in front of a test S3 server that records every request and may act before
 * forwarding one (`before`): a fault injector for races a real store would let happen, such as a
 * client replacing a staged object through its still-valid URL exactly while the server copies it.
 * Requests are forwarded byte for byte (the Host header too), so SigV4 signatures still verify.
 */
export interface InterceptingProxy {
  /** `http://127.0.0.1:<port>`: use it as the store's endpoint. */
  readonly endpoint: string;
  readonly seen: SeenS3Request[];
  /** Runs (and is awaited) before a request is forwarded. */
  before: ((r: SeenS3Request) => Promise<void>) | null;
  /**
   * When true the proxy makes the store behind it honour what s3rver ignores, as S3 does:
   * `If-None-Match: *` on a PUT or copy (412 when the key exists), `x-amz-copy-source-if-match`
   * (412 when the source's ETag differs) and `x-amz-checksum-sha256` on a PUT (400 BadDigest when
   * the body's SHA-256 differs). Judged after `before`, so a swap there is seen.
   */
  honour: boolean;
  close(): Promise<void>;
}

export async function startInterceptingProxy(target: string, bucket: string): Promise<InterceptingProxy> {
  const { createServer: createHttpServer, request } = await import('node:http');
  const { createHash } = await import('node:crypto');
  const { S3Client, HeadObjectCommand } = await import('@aws-sdk/client-s3');
  const direct = new S3Client({
    endpoint: target,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { ...S3RVER_KEY },
  });
  const etagOf = async (key: string): Promise<string | null> => {
    try {
      return (await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ETag ?? null;
    } catch {
      return null;
    }
  };
  const refuse = (res: import('node:http').ServerResponse, status: number, code: string) => {
    res.writeHead(status, { 'content-type': 'application/xml' });
    res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`);
  };
  const url = new URL(target);
  const keyOf = (path: string): string => {
    const p = decodeURIComponent(path.split('?')[0] ?? '');
    const prefix = `/${bucket}/`;
    return p.startsWith(prefix) ? p.slice(prefix.length) : '';
  };
  const proxy: InterceptingProxy = {
    endpoint: '',
    seen: [],
    before: null,
    honour: false,
    close: async () => {
      direct.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  const server = createHttpServer((req, res) => {
    const source = req.headers['x-amz-copy-source'];
    const copySource = typeof source === 'string' ? keyOf(`/${decodeURIComponent(source).replace(/^\//, '')}`) : null;
    const seen: SeenS3Request = {
      method: req.method ?? 'GET',
      key: keyOf(req.url ?? '/'),
      copySource,
      headers: { ...req.headers },
    };
    proxy.seen.push(seen);
    const forward = (body: Buffer | null) => {
      const upstream = request(
        { host: url.hostname, port: Number(url.port), method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      // An answer already on its way (a refusal the store gave before reading the body, then
      // closed) is let through; a request the client gave up leaves no half-sent request behind.
      upstream.on('error', () => {
        if (!res.headersSent) res.destroy();
      });
      res.on('close', () => upstream.destroy());
      if (body === null) req.pipe(upstream);
      else upstream.end(body);
    };
    /** Forwards, or answers as S3 would where s3rver would not (with `honour`). */
    const judge = async (): Promise<void> => {
      if (!proxy.honour || seen.method !== 'PUT') return forward(null);
      if (seen.headers['if-none-match'] === '*' && (await etagOf(seen.key)) !== null)
        return refuse(res, 412, 'PreconditionFailed');
      const ifMatch = seen.headers['x-amz-copy-source-if-match'];
      if (typeof ifMatch === 'string' && seen.copySource !== null && (await etagOf(seen.copySource)) !== ifMatch)
        return refuse(res, 412, 'PreconditionFailed');
      const checksum = seen.headers['x-amz-checksum-sha256'];
      if (typeof checksum !== 'string' || seen.copySource !== null) return forward(null);
      const parts: Buffer[] = [];
      for await (const chunk of req) parts.push(chunk as Buffer);
      const body = Buffer.concat(parts);
      if (createHash('sha256').update(body).digest('base64') !== checksum) return refuse(res, 400, 'BadDigest');
      return forward(body);
    };
    req.pause();
    void (proxy.before ? proxy.before(seen) : Promise.resolve()).then(judge).catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  Object.assign(proxy, { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  return proxy;
}
