import { createHash, randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3BlobStore } from '@strongroom/adapters-node/s3';
import { S3RVER_KEY, startTestS3, type TestS3 } from '@strongroom/adapters-node/testing';
import { testServer, type TestServer } from '@strongroom/tests';
import { DeviceKeys, IdentityKey, StrongroomClient, type UploadProgress, type UploadSource } from './index.js';

// upload() from every kind of source, with progress, abort and resume, against a real server on
// loopback (a memory store, and S3 through s3rver); a relay in front of it cuts connections on cue.

const PASSWORD = 'correct horse battery staple';
const CHUNK = 64 * 1024;
let n = 0;
const address = () => `st${++n}-${Math.random().toString(36).slice(2, 8)}@example.org`;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const blobOf = (b: Uint8Array) => new Blob([b as BlobPart]);
const bytesOf = async (body: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(body).arrayBuffer());

/** What the client sent: each request's method and path, and each PATCH's Upload-Offset and length. */
interface Sent {
  method: string;
  path: string;
  offset?: number;
  length?: number;
}

async function signedIn(server: TestServer, baseUrl = server.baseUrl) {
  const sent: Sent[] = [];
  const client = new StrongroomClient({
    baseUrl,
    fetch: async (request, init) => {
      const entry: Sent = { method: request.method, path: new URL(request.url).pathname };
      if (request.method === 'PATCH') {
        entry.offset = Number(request.headers.get('upload-offset'));
        entry.length = (await request.clone().arrayBuffer()).byteLength;
      }
      sent.push(entry);
      return fetch(request, init);
    },
  });
  await client.register(address(), PASSWORD);
  await client.publishDirectory(
    IdentityKey.generate().signDirectory(client.accountId!, 1, [
      DeviceKeys.generate('phone-1').entry(Math.floor(server.clock.now() / 1000) - 60),
    ]),
  );
  sent.length = 0;
  return { client, sent };
}

/** The same bytes as each kind of source; a stream and an iterable in uneven chunks that do not line up with CHUNK. */
const sources: [string, (b: Uint8Array) => UploadSource][] = [
  ['Uint8Array', (b) => b],
  ['Blob', (b) => blobOf(b)],
  [
    'ReadableStream',
    (b) => {
      let at = 0;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (at >= b.length) return controller.close();
          const step = 1 + ((at * 7919) % 50_000);
          controller.enqueue(b.slice(at, at + step));
          at += step;
        },
      });
    },
  ],
  [
    'async iterable',
    (b) =>
      (async function* () {
        for (let at = 0; at < b.length; at += 30_001) yield b.slice(at, at + 30_001);
      })(),
  ],
];

/**
 * A TCP relay in front of the server that cuts, once each, the connection on which the client has
 * sent `cutAfter` bytes in all (mid-request), or on which the server answers after the client has
 * sent `loseAnswerAfter` bytes (the request arrived whole; its answer never comes back).
 */
class Relay {
  server: Server | null = null;
  port = 0;
  sentUp = 0;
  cutAfter = Number.POSITIVE_INFINITY;
  loseAnswerAfter = Number.POSITIVE_INFINITY;
  cuts = 0;
  readonly sockets = new Set<Socket>();
  constructor(private readonly target: number) {}
  async start(): Promise<string> {
    this.server = createServer((down: Socket) => {
      const up = connect(this.target, '127.0.0.1');
      this.sockets.add(down).add(up);
      const cut = () => {
        this.cuts++;
        down.destroy();
        up.destroy();
      };
      down.on('data', (data: Buffer) => {
        if (this.sentUp + data.length >= this.cutAfter) {
          const keep = this.cutAfter - this.sentUp;
          this.cutAfter = Number.POSITIVE_INFINITY;
          this.sentUp += keep;
          up.write(data.subarray(0, keep), cut);
          return;
        }
        this.sentUp += data.length;
        up.write(data);
      });
      up.on('data', (data: Buffer) => {
        if (this.sentUp >= this.loseAnswerAfter) {
          this.loseAnswerAfter = Number.POSITIVE_INFINITY;
          return cut();
        }
        down.write(data);
      });
      down.on('error', () => up.destroy());
      up.on('error', () => down.destroy());
      down.on('close', () => up.destroy());
      up.on('close', () => down.destroy());
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as { port: number }).port;
    return `http://127.0.0.1:${this.port}`;
  }
  /** Stops listening and drops every connection: the server is unreachable from now on. */
  stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

let s3: TestS3;
let bucket: S3BlobStore;
const servers: { name: string; server: TestServer }[] = [];
beforeAll(async () => {
  s3 = await startTestS3('strongroom-streaming');
  bucket = new S3BlobStore({
    bucket: s3.bucket,
    prefix: 'st',
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_KEY,
  });
  servers.push(
    { name: 'memory store', server: await testServer() },
    { name: 'S3 store', server: await testServer({}, {}, { blobs: bucket }) },
  );
}, 30_000);
afterAll(async () => {
  for (const { server } of servers) await server.close();
  bucket?.close();
  await s3?.stop();
});

describe.each(sources)('upload() from a %s', { timeout: 30_000 }, (_kind, make) => {
  it.each([0, 1])('sends it a chunk per PATCH, reports each, and the blob reads back whole (server %i)', async (i) => {
    const { server } = servers[i]!;
    const { client, sent } = await signedIn(server);
    const bytes = new Uint8Array(randomBytes(5 * CHUNK + 1234));
    const progress: UploadProgress[] = [];
    const up = await client.upload(make(bytes), {
      deviceId: 'phone-1',
      size: bytes.length,
      chunkSize: CHUNK,
      direct: false,
      onProgress: (p) => progress.push(p),
    });
    expect(up).toMatchObject({ state: 'Completed', contentHash: sha(bytes), transfer: 'proxied' });
    const patches = sent.filter((r) => r.method === 'PATCH');
    expect(patches.map((p) => [p.offset, p.length])).toEqual([
      ...[0, 1, 2, 3, 4].map((k) => [k * CHUNK, CHUNK]),
      [5 * CHUNK, 1234],
    ]);
    expect(progress).toEqual(
      [0, 1, 2, 3, 4, 5, 6].map((k) => ({ sent: Math.min(k * CHUNK, bytes.length), total: bytes.length })),
    );
    expect(sha(await bytesOf((await client.download(up.contentHash)).body))).toBe(up.contentHash);
  });
});

describe('upload() refuses a source of the wrong length', { timeout: 30_000 }, () => {
  it('a stream that ends early, or runs long: error.client.size_mismatch, and the session is cancelled', async () => {
    const { server } = servers[0]!;
    const { client } = await signedIn(server);
    const bytes = new Uint8Array(randomBytes(3 * CHUNK));
    for (const size of [bytes.length + 10, bytes.length - 10]) {
      let id = '';
      await expect(
        client.upload(blobOf(bytes).stream(), {
          deviceId: 'phone-1',
          size,
          chunkSize: CHUNK,
          onSession: (u) => {
            id = u;
          },
        }),
      ).rejects.toMatchObject({ code: 'error.client.size_mismatch' });
      const r = await client.api.GET('/upload/{id}', { params: { path: { id } } });
      expect(r.data?.state).toBe('Cancelled');
    }
    await expect(client.upload(blobOf(bytes).stream(), { deviceId: 'phone-1' } as never)).rejects.toBeInstanceOf(
      RangeError,
    );
  });
});

describe('upload() aborted, then resumed', { timeout: 30_000 }, () => {
  it('an abort stops at once and keeps the session; resuming sends only what the server lacks', async () => {
    const { server } = servers[0]!;
    const { client, sent } = await signedIn(server);
    const bytes = new Uint8Array(randomBytes(6 * CHUNK + 99));
    const controller = new AbortController();
    let id = '';
    const first = client.upload(blobOf(bytes), {
      deviceId: 'phone-1',
      chunkSize: CHUNK,
      signal: controller.signal,
      onSession: (u) => {
        id = u;
      },
      onProgress: (p) => {
        if (p.sent === 2 * CHUNK) controller.abort();
      },
    });
    await expect(first).rejects.toHaveProperty('name', 'AbortError');
    const held = await server.request(`/upload-tus/${id}`, {
      method: 'HEAD',
      headers: {
        authorization: `Bearer ${client.session!.accessToken}`,
        'x-svc-protocol': '2026-11-01',
        'tus-resumable': '1.0.0',
      },
    });
    const offset = Number(held.headers.get('upload-offset'));
    // The abort came while the third chunk was on its way: the server holds two or three chunks, no part of one.
    expect([2 * CHUNK, 3 * CHUNK]).toContain(offset);

    sent.length = 0;
    const progress: number[] = [];
    const up = await client.upload(blobOf(bytes), {
      deviceId: 'phone-1',
      chunkSize: CHUNK,
      resume: id,
      onProgress: (p) => progress.push(p.sent),
    });
    expect(up).toMatchObject({ uploadId: id, state: 'Completed', contentHash: sha(bytes) });
    expect(sent.filter((r) => r.method === 'POST' && r.path === '/upload')).toEqual([]);
    const patches = sent.filter((r) => r.method === 'PATCH');
    expect(patches[0]!.offset).toBe(offset);
    expect(patches.reduce((sum, p) => sum + p.length!, 0)).toBe(bytes.length - offset);
    expect(progress[0]).toBe(offset);
    expect(progress.at(-1)).toBe(bytes.length);
  });

  it('a stream resumes too: the bytes the server holds are read again to hash them, not sent', async () => {
    const { server } = servers[0]!;
    const { client, sent } = await signedIn(server);
    const bytes = new Uint8Array(randomBytes(4 * CHUNK));
    const controller = new AbortController();
    let id = '';
    await expect(
      client.upload(blobOf(bytes).stream(), {
        deviceId: 'phone-1',
        size: bytes.length,
        chunkSize: CHUNK,
        signal: controller.signal,
        onSession: (u) => {
          id = u;
        },
        onProgress: (p) => {
          if (p.sent === CHUNK) controller.abort();
        },
      }),
    ).rejects.toHaveProperty('name', 'AbortError');
    sent.length = 0;
    const up = await client.upload(blobOf(bytes).stream(), {
      deviceId: 'phone-1',
      size: bytes.length,
      chunkSize: CHUNK,
      resume: id,
    });
    expect(up).toMatchObject({ state: 'Completed', contentHash: sha(bytes) });
    expect(sent.filter((r) => r.method === 'PATCH').every((p) => p.offset! >= CHUNK)).toBe(true);
  });

  it('a resumed upload from other bytes than the server holds is refused at finalize, and nothing is charged', async () => {
    const { server } = servers[0]!;
    const { client } = await signedIn(server);
    const bytes = new Uint8Array(randomBytes(3 * CHUNK));
    const controller = new AbortController();
    let id = '';
    await expect(
      client.upload(blobOf(bytes), {
        deviceId: 'phone-1',
        chunkSize: CHUNK,
        signal: controller.signal,
        onSession: (u) => {
          id = u;
        },
        onProgress: (p) => {
          if (p.sent === CHUNK) controller.abort();
        },
      }),
    ).rejects.toHaveProperty('name', 'AbortError');
    const other = bytes.map((b) => b ^ 0xff);
    await expect(
      client.upload(blobOf(other), { deviceId: 'phone-1', chunkSize: CHUNK, resume: id }),
    ).rejects.toMatchObject({ code: 'error.conflict' });
    // Only the open session's reservation counts; nothing was charged.
    expect((await client.api.GET('/quota')).data).toMatchObject({ used: 3 * CHUNK, reserved: 3 * CHUNK });
    expect((await client.api.GET('/upload/{id}', { params: { path: { id } } })).data?.state).not.toBe('Completed');
  });

  it('an access token that runs out mid-upload is replaced and the refused chunk sent again', async () => {
    const { server } = servers[0]!;
    const { client, sent } = await signedIn(server);
    const bytes = new Uint8Array(randomBytes(3 * CHUNK));
    const first = client.session!.accessToken;
    const up = await client.upload(blobOf(bytes), {
      deviceId: 'phone-1',
      chunkSize: CHUNK,
      // The server's clock moves past the token's 15 minutes; this device's clock does not.
      onProgress: (p) => {
        if (p.sent === CHUNK) server.clock.advance(16 * 60_000);
      },
    });
    expect(up).toMatchObject({ state: 'Completed', contentHash: sha(bytes) });
    expect(client.session!.accessToken).not.toBe(first);
    expect(sent.filter((r) => r.method === 'PATCH').map((p) => p.offset)).toEqual([0, CHUNK, CHUNK, 2 * CHUNK]);
  });

  it('an abort before anything was sent rejects at once and opens nothing', async () => {
    const { server } = servers[0]!;
    const { client, sent } = await signedIn(server);
    const controller = new AbortController();
    controller.abort();
    await expect(
      client.upload(new Uint8Array(10), { deviceId: 'phone-1', signal: controller.signal }),
    ).rejects.toHaveProperty('name', 'AbortError');
    expect(sent).toEqual([]);
  });
});

describe.each([0, 1])('upload() through a relay that cuts the connection (server %i)', { timeout: 30_000 }, (i) => {
  let relay: Relay;
  let base: string;
  beforeAll(async () => {
    relay = new Relay(Number(new URL(servers[i]!.server.baseUrl).port));
    base = await relay.start();
  });
  afterAll(async () => {
    await relay.stop();
  });

  it('cut mid-PATCH: asks the server where it stands and sends that chunk again; the blob hashes right', async () => {
    const { server } = servers[i]!;
    const { client, sent } = await signedIn(server, base);
    const bytes = new Uint8Array(randomBytes(5 * CHUNK));
    // Midway through the third chunk's body.
    relay.cutAfter = relay.sentUp + 2 * CHUNK + CHUNK / 2 + 4096;
    const cutsBefore = relay.cuts;
    const up = await client.upload(blobOf(bytes), { deviceId: 'phone-1', chunkSize: CHUNK, retryDelays: [0, 0] });
    expect(relay.cuts).toBe(cutsBefore + 1);
    expect(up).toMatchObject({ state: 'Completed', contentHash: sha(bytes) });
    const patches = sent.filter((r) => r.method === 'PATCH').map((p) => p.offset);
    expect(patches).toEqual([0, CHUNK, 2 * CHUNK, 2 * CHUNK, 3 * CHUNK, 4 * CHUNK]);
    expect(sent.some((r) => r.method === 'GET' && r.path.startsWith('/upload-tus/'))).toBe(true);
    expect(sha(await bytesOf((await client.download(up.contentHash)).body))).toBe(sha(bytes));
  });

  it("cut after a PATCH arrived whole, before its answer: the server's offset says it landed, and it is not sent again", async () => {
    const { server } = servers[i]!;
    const { client, sent } = await signedIn(server, base);
    const bytes = new Uint8Array(randomBytes(4 * CHUNK));
    let armed = false;
    const cutsBefore = relay.cuts;
    const up = await client.upload(blobOf(bytes), {
      deviceId: 'phone-1',
      chunkSize: CHUNK,
      retryDelays: [0, 0],
      onProgress: (p) => {
        // Once the first chunk is in: whatever the server answers next (the second PATCH's 204) is lost.
        if (p.sent === CHUNK && !armed) {
          armed = true;
          relay.loseAnswerAfter = relay.sentUp + CHUNK;
        }
      },
    });
    expect(up).toMatchObject({ state: 'Completed', contentHash: sha(bytes) });
    expect(relay.cuts).toBe(cutsBefore + 1);
    expect(sent.filter((r) => r.method === 'PATCH').map((p) => p.offset)).toEqual([0, CHUNK, 2 * CHUNK, 3 * CHUNK]);
    expect(sent.some((r) => r.method === 'GET' && r.path.startsWith('/upload-tus/'))).toBe(true);
  });

  it('a server that stays unreachable: the upload gives up after its retries with an OutageError, resumable later', async () => {
    const { server } = servers[i]!;
    const { client } = await signedIn(server, base);
    const bytes = new Uint8Array(randomBytes(3 * CHUNK));
    let id = '';
    // Every connection from the second chunk on is cut mid-body.
    const failing = client.upload(blobOf(bytes), {
      deviceId: 'phone-1',
      chunkSize: CHUNK,
      retryDelays: [0, 0],
      onSession: (u) => {
        id = u;
      },
      onProgress: (p) => {
        if (p.sent === CHUNK) void relay.stop();
      },
    });
    await expect(failing).rejects.toMatchObject({ name: 'OutageError' });
    relay = new Relay(Number(new URL(server.baseUrl).port));
    const direct = new StrongroomClient({ baseUrl: server.baseUrl, session: client.session });
    const up = await direct.upload(blobOf(bytes), { deviceId: 'phone-1', chunkSize: CHUNK, resume: id });
    expect(up).toMatchObject({ state: 'Completed', contentHash: sha(bytes) });
    base = await relay.start();
  });
});
