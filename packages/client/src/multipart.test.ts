import { createHash, randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3BlobStore } from '@strongroom/adapters-node/s3';
import {
  S3RVER_KEY,
  startInterceptingProxy,
  startTestS3,
  type InterceptingProxy,
  type TestS3,
} from '@strongroom/adapters-node/testing';
import { testServer, type TestServer } from '@strongroom/tests';
import { DeviceKeys, IdentityKey, StrongroomClient, type UploadProgress } from './index.js';

/**
 * upload() of a direct upload in parts (S3 multipart): a server on s3rver whose parts are 5 MiB
 * (S3's least), a relay in front of the bucket that cuts a part's connection midway, and an
 * intercepting proxy behind it that checks each part's x-amz-checksum-sha256 as S3 does (s3rver
 * does not) and shows what reached the bucket.
 */

const PASSWORD = 'correct horse battery staple';
const MiB = 1024 * 1024;
const PART = 5 * MiB;
let n = 0;
const address = () => `mp${++n}-${Math.random().toString(36).slice(2, 8)}@example.org`;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const blobOf = (b: Uint8Array) => new Blob([b as BlobPart]);
const bytesOf = async (body: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(body).arrayBuffer());

/**
 * A TCP relay that cuts the connection carrying a request whose head holds `marker` (such as
 * `partNumber=2&`) once `bytes` more have gone up after it: a part dropped midway. Unlike the
 * store tests' relay it looks at every request of a kept-alive connection, as fetch reuses them.
 */
class PartCutter {
  server: Server | null = null;
  readonly sockets = new Set<Socket>();
  armed: { marker: string; bytes: number } | null = null;
  cuts = 0;
  constructor(private readonly target: URL) {}
  async start(): Promise<string> {
    this.server = createServer((down: Socket) => {
      const up = connect(Number(this.target.port), this.target.hostname);
      this.sockets.add(down).add(up);
      let tail = '';
      let left = Number.POSITIVE_INFINITY;
      down.on('data', (data: Buffer) => {
        if (left === Number.POSITIVE_INFINITY && this.armed !== null) {
          const seen = tail + data.toString('latin1');
          const at = seen.indexOf(this.armed.marker);
          if (at >= 0) {
            left = this.armed.bytes + (at - tail.length);
            this.armed = null;
          } else tail = seen.slice(-256);
        }
        if (data.length >= left) {
          up.write(data.subarray(0, Math.max(0, left)), () => {
            this.cuts++;
            down.destroy();
            up.destroy();
          });
          left = Number.POSITIVE_INFINITY;
          down.pause();
          return;
        }
        left -= data.length;
        up.write(data);
      });
      up.pipe(down);
      down.on('error', () => up.destroy());
      up.on('error', () => down.destroy());
      down.on('close', () => up.destroy());
      up.on('close', () => down.end());
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }
  stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** A request the client sent to the bucket: its part number and whether it carried a credential. */
interface ToBucket {
  method: string;
  partNumber: number | null;
  authorization: string | null;
}

let s3: TestS3;
let inspector: InterceptingProxy;
let cutter: PartCutter;
let bucketUrl: string;
let bucket: S3BlobStore;
let server: TestServer;

beforeAll(async () => {
  s3 = await startTestS3('strongroom-client-parts');
  inspector = await startInterceptingProxy(s3.endpoint, s3.bucket);
  inspector.honour = true;
  cutter = new PartCutter(new URL(inspector.endpoint));
  bucketUrl = await cutter.start();
  bucket = new S3BlobStore({
    bucket: s3.bucket,
    prefix: 'mp',
    // Signed URLs name the relay: the client's parts pass through it.
    endpoint: bucketUrl,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_KEY,
  });
  server = await testServer(
    {
      SVC_BLOB_URL: `s3://${s3.bucket}/mp`,
      SVC_S3_ENDPOINT: bucketUrl,
      SVC_S3_FORCE_PATH_STYLE: 'true',
      SVC_S3_PART_BYTES: String(PART),
    },
    {},
    { blobs: bucket },
  );
}, 60_000);
afterAll(async () => {
  await server?.close();
  bucket?.close();
  await cutter?.stop();
  await inspector?.close();
  await s3?.stop();
});

async function signedIn() {
  const toBucket: ToBucket[] = [];
  const client = new StrongroomClient({
    baseUrl: server.baseUrl,
    fetch: (request, init) => {
      const url = new URL(request.url);
      if (url.origin === bucketUrl)
        toBucket.push({
          method: request.method,
          partNumber: url.searchParams.has('partNumber') ? Number(url.searchParams.get('partNumber')) : null,
          authorization: request.headers.get('authorization'),
        });
      return fetch(request, init);
    },
  });
  await client.register(address(), PASSWORD);
  await client.publishDirectory(
    IdentityKey.generate().signDirectory(client.accountId!, 1, [
      DeviceKeys.generate('phone-1').entry(Math.floor(server.clock.now() / 1000) - 60),
    ]),
  );
  return { client, toBucket };
}

/** The part PUTs the bucket saw for one upload, and whether any carried a credential of the server's. */
const partsSeen = (uploadId: string) => {
  const puts = inspector.seen.filter((r) => r.method === 'PUT' && r.key === `mp/staging/${uploadId}`);
  return {
    count: puts.length,
    credentials: puts.filter((r) => r.headers.authorization !== undefined || r.headers['x-svc-protocol'] !== undefined)
      .length,
  };
};

describe('upload() of a large file on a bucket that takes parts', { timeout: 120_000 }, () => {
  it.each([
    ['Blob', (b: Uint8Array) => blobOf(b)],
    ['Uint8Array', (b: Uint8Array) => b],
  ] as const)(
    'a %s goes straight to the bucket in signed parts, a part cut midway is sent again, and the blob reads back whole',
    async (_kind, make) => {
      const { client, toBucket } = await signedIn();
      const bytes = new Uint8Array(randomBytes(2 * PART + 1234));
      const progress: UploadProgress[] = [];
      const cutsBefore = cutter.cuts;
      cutter.armed = { marker: 'partNumber=2&', bytes: 2 * MiB };
      const up = await client.upload(make(bytes), {
        deviceId: 'phone-1',
        chunkSize: MiB,
        retryDelays: [0, 0],
        onProgress: (p) => progress.push(p),
      });
      expect(up).toMatchObject({ state: 'Completed', contentHash: sha(bytes), transfer: 'direct' });
      expect(cutter.cuts).toBe(cutsBefore + 1);
      // Part 2 twice (cut, then whole), each with its own signed URL; nothing else twice.
      expect(toBucket.map((r) => [r.method, r.partNumber])).toEqual([
        ['PUT', 1],
        ['PUT', 2],
        ['PUT', 2],
        ['PUT', 3],
      ]);
      expect(toBucket.map((r) => r.authorization)).toEqual([null, null, null, null]);
      expect(partsSeen(up.uploadId)).toEqual({ count: 4, credentials: 0 });
      expect(progress.map((p) => p.sent)).toEqual([0, PART, 2 * PART, bytes.length]);
      expect(progress.every((p) => p.total === bytes.length)).toBe(true);
      expect(await s3.keys(`mp/blobs/${up.contentHash.slice(0, 2)}/${up.contentHash}`)).toHaveLength(1);
      expect(sha(await bytesOf((await client.download(up.contentHash)).body))).toBe(sha(bytes));
    },
  );

  it('aborted after its first part, then resumed: the parts the store holds are read to hash them, not sent again', async () => {
    const { client, toBucket } = await signedIn();
    const bytes = new Uint8Array(randomBytes(3 * PART - 7));
    const controller = new AbortController();
    let id = '';
    await expect(
      client.upload(blobOf(bytes), {
        deviceId: 'phone-1',
        signal: controller.signal,
        onSession: (u) => {
          id = u;
        },
        onProgress: (p) => {
          if (p.sent === PART) controller.abort();
        },
      }),
    ).rejects.toHaveProperty('name', 'AbortError');
    const held = await client.api.GET('/upload/{id}/parts', { params: { path: { id } } });
    expect(held.data).toMatchObject({ stored: [{ part_number: 1, size: PART }], missing: [2, 3] });

    toBucket.length = 0;
    const progress: number[] = [];
    const up = await client.upload(blobOf(bytes), {
      deviceId: 'phone-1',
      resume: id,
      onProgress: (p) => progress.push(p.sent),
    });
    expect(up).toMatchObject({ uploadId: id, state: 'Completed', contentHash: sha(bytes), transfer: 'direct' });
    expect(toBucket.map((r) => r.partNumber)).toEqual([2, 3]);
    expect(progress).toEqual([0, PART, 2 * PART, bytes.length]);
    expect(sha(await bytesOf((await client.download(up.contentHash)).body))).toBe(sha(bytes));
  });

  it('a stream, which cannot be read twice, and direct: false go through the server by tus instead', async () => {
    const { client, toBucket } = await signedIn();
    const bytes = new Uint8Array(randomBytes(PART + 99));
    const viaStream = await client.upload(blobOf(bytes).stream(), { deviceId: 'phone-1', size: bytes.length });
    expect(viaStream).toMatchObject({ state: 'Completed', contentHash: sha(bytes), transfer: 'proxied' });
    const other = bytes.map((b) => b ^ 0x5a);
    const viaServer = await client.upload(blobOf(other), { deviceId: 'phone-1', direct: false });
    expect(viaServer).toMatchObject({ state: 'Completed', contentHash: sha(other), transfer: 'proxied' });
    expect(toBucket).toEqual([]);
  });
});
