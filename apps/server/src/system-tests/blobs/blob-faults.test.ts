import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLogger, TestDevice, TestIdentity } from '@strongroom/core/testing';
import {
  S3RVER_KEY,
  startFaultProxy,
  startTestS3,
  useS3rverCredentials,
  type FaultProxy,
  type TestS3,
} from '@strongroom/adapters-node/testing';
import { createApp } from '../../app.js';
import { runCli } from '../../cli.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores } from '../../deps.js';
import { call, listen, registerUser, VERSION } from '@strongroom/tests';

/**
 * Faults of the blob store: a bucket that goes away or falls silent mid-upload and mid-download
 * (a TCP relay in front of s3rver, cut or stalled on demand), and a blob deleted behind the
 * server's back, on the filesystem and on S3. The ledger is compared before and after each.
 */

const BASE = { SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc' };
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const MiB = 1024 * 1024;
/** Two attempts of SVC_S3_TIMEOUT_S=1 and the SDK's back-off, with room for a shared machine. */
const BOUND_MS = 6000;

async function deployment(env: Record<string, string>) {
  const dataDir = await mkdtemp(join(tmpdir(), 'blob-faults-'));
  const fullEnv = { ...BASE, SVC_DATA_DIR: dataDir, ...env };
  const config = readConfig(fullEnv);
  const stores = await openStores(config);
  const app = createApp(await buildDeps(config, stores, { ...nodePlatform(), logger: new MemoryLogger() }));
  const server = await listen(app);
  const { access_token: token } = await registerUser(app);
  const accountId = ((await call(app, 'GET', '/v1/auth/profile', { token })).body as { account_id: string }).account_id;
  expect(
    (
      await call(app, 'PUT', '/v1/devices/directory', {
        token,
        cbor: new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]),
      })
    ).status,
  ).toBeLessThan(300);
  const ledger = async () => ({
    charged: (await stores.quota.listChargedBlobs(accountId)).map((b) => `${b.contentHash}:${b.size}`).sort(),
    used: ((await call(app, 'GET', '/quota', { token })).body as { used: number }).used,
  });
  const open = async (size: number): Promise<string> => {
    const r = await call(app, 'POST', '/upload', {
      token,
      body: { declared_size: size, kind: 'original', device_id: 'phone' },
    });
    expect(r.status).toBe(201);
    return (r.body as { upload_id: string }).upload_id;
  };
  const upload = async (bytes: Uint8Array): Promise<string> => {
    const id = await open(bytes.length);
    expect(
      (
        await call(app, 'PUT', `/upload/${id}`, {
          token,
          raw: new Uint8Array(bytes),
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBe(200);
    expect(
      (await call(app, 'POST', `/upload/${id}/finalize`, { token, body: { content_hash: sha(bytes) } })).status,
    ).toBe(200);
    return sha(bytes);
  };
  const get = (hash: string) =>
    fetch(`${server.baseUrl}/v1/blobs/${hash}`, {
      headers: { authorization: `Bearer ${token}`, 'x-svc-protocol': VERSION },
      redirect: 'manual',
    });
  const close = async () => {
    await server.close();
    await stores.close();
    await rm(dataDir, { recursive: true, force: true });
  };
  return { env: fullEnv, dataDir, stores, app, server, token, ledger, open, upload, get, close };
}
type Deployment = Awaited<ReturnType<typeof deployment>>;

async function expectUnavailable(started: number, r: Response): Promise<void> {
  expect(r.status).toBe(503);
  expect(r.headers.get('content-type')).toContain('application/problem+json');
  expect(((await r.json()) as { code: string }).code).toBe('error.store.unavailable');
  expect(Date.now() - started).toBeLessThan(BOUND_MS);
}

const pattern = (size: number, seed: number) => new Uint8Array(size).map((_, i) => (i * 7 + seed + (i >>> 10)) & 0xff);

describe('blob store faults on S3 (s3rver behind a relay that can be cut)', { timeout: 90_000 }, () => {
  let s3: TestS3;
  let relay: FaultProxy;
  let d: Deployment;
  let restoreCredentials = (): void => {};

  beforeAll(async () => {
    s3 = await startTestS3();
    relay = await startFaultProxy(s3.endpoint);
    restoreCredentials = useS3rverCredentials();
    // The server carries the bytes (SVC_S3_DIRECT=false), so it is the one caught mid-transfer.
    d = await deployment({
      SVC_BLOB_URL: `s3://${s3.bucket}/lib`,
      SVC_S3_ENDPOINT: relay.endpoint,
      SVC_S3_FORCE_PATH_STYLE: 'true',
      SVC_S3_TIMEOUT_S: '1',
      SVC_S3_DIRECT: 'false',
    });
  }, 60_000);
  afterAll(async () => {
    await d?.close();
    await relay?.close();
    await s3?.stop();
    restoreCredentials();
  });

  it('cut mid-download: the body fails (never a short 200 taken as whole); then 503 within the bound, and /readyz names the blob store', async () => {
    relay.up();
    const bytes = pattern(12 * MiB, 1);
    const hash = await d.upload(bytes);
    const r = await d.get(hash);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-length')).toBe(String(bytes.length));
    const reader = r.body!.getReader();
    let got = (await reader.read()).value?.length ?? 0;
    relay.down();
    const rest = (async () => {
      for (;;) {
        const next = await reader.read();
        if (next.done) return got;
        got += next.value.length;
      }
    })();
    await expect(rest).rejects.toThrow();
    expect(got).toBeLessThan(bytes.length);

    let started = Date.now();
    await expectUnavailable(started, await d.get(hash));
    started = Date.now();
    const ready = await fetch(`${d.server.baseUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ code: 'error.store.unavailable', dependency: 'blob_store' });
    expect(Date.now() - started).toBeLessThan(BOUND_MS);

    // Silent rather than gone: the same bound.
    relay.hang();
    started = Date.now();
    await expectUnavailable(started, await d.get(hash));
    relay.up();
    expect((await fetch(`${d.server.baseUrl}/readyz`)).status).toBe(200);
    const again = await d.get(hash);
    expect(sha(new Uint8Array(await again.arrayBuffer()))).toBe(hash);
  });

  it('cut mid-upload and at finalize: 503 within the bound, the ledger unchanged, and the upload can be sent again', async () => {
    relay.up();
    const before = await d.ledger();
    const bytes = pattern(10 * MiB, 2);
    const id = await d.open(bytes.length);
    const opened = await d.ledger();
    // The body streams: its first 9 MiB pass (one multipart part reaches the store), then the store goes.
    let push!: (chunk: Uint8Array | null) => void;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        push = (chunk) => (chunk === null ? controller.close() : controller.enqueue(chunk));
      },
    });
    const started = Date.now();
    const sending = fetch(`${d.server.baseUrl}/upload/${id}`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${d.token}`,
        'x-svc-protocol': VERSION,
        'content-type': 'application/octet-stream',
      },
      body,
      duplex: 'half',
    } as RequestInit);
    const relayedBefore = relay.relayedUp();
    push(bytes.subarray(0, 9 * MiB));
    // The store has the first 8 MiB part (the S3 store's part size) before it goes.
    while (relay.relayedUp() - relayedBefore < 8 * MiB) await new Promise((r) => setTimeout(r, 10));
    relay.down();
    push(bytes.subarray(9 * MiB));
    push(null);
    await expectUnavailable(started, await sending);
    expect(await d.ledger()).toEqual(opened);
    expect(await call(d.app, 'GET', `/upload/${id}`, { token: d.token })).toMatchObject({
      status: 200,
      body: { state: 'Pending' },
    });

    // Sent again with the store back, then the store goes before finalize: nothing committed or charged.
    relay.up();
    expect(
      (
        await call(d.app, 'PUT', `/upload/${id}`, {
          token: d.token,
          raw: bytes,
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBe(200);
    relay.down();
    const finalizing = Date.now();
    const fin = await fetch(`${d.server.baseUrl}/upload/${id}/finalize`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.token}`, 'x-svc-protocol': VERSION, 'content-type': 'application/json' },
      body: JSON.stringify({ content_hash: sha(bytes) }),
    });
    await expectUnavailable(finalizing, fin);
    expect(await d.ledger()).toEqual(opened);
    relay.up();
    expect(
      (await call(d.app, 'POST', `/upload/${id}/finalize`, { token: d.token, body: { content_hash: sha(bytes) } }))
        .status,
    ).toBe(200);
    const after = await d.ledger();
    expect(after.charged).toEqual([...before.charged, `${sha(bytes)}:${bytes.length}`].sort());
    expect(after.used).toBe(opened.used);
  });

  it('direct upload, store gone at finalize: 503 within the bound, nothing charged, the session waits; finalized once the store is back', async () => {
    relay.up();
    const dd = await deployment({
      SVC_BLOB_URL: `s3://${s3.bucket}/direct`,
      SVC_S3_ENDPOINT: relay.endpoint,
      SVC_S3_FORCE_PATH_STYLE: 'true',
      SVC_S3_TIMEOUT_S: '1',
    });
    try {
      const bytes = pattern(MiB, 7);
      const opened = await call(dd.app, 'POST', '/upload', {
        token: dd.token,
        body: { declared_size: bytes.length, kind: 'original', device_id: 'phone', content_hash: sha(bytes) },
      });
      const { upload_id: id, direct_put: direct } = opened.body as {
        upload_id: string;
        direct_put: { url: string; headers: Record<string, string> };
      };
      expect((await fetch(direct.url, { method: 'PUT', headers: direct.headers, body: bytes })).status).toBe(200);
      const before = await dd.ledger();
      relay.down();
      const started = Date.now();
      const fin = await fetch(`${dd.server.baseUrl}/upload/${id}/finalize`, {
        method: 'POST',
        headers: { authorization: `Bearer ${dd.token}`, 'x-svc-protocol': VERSION, 'content-type': 'application/json' },
        body: JSON.stringify({ content_hash: sha(bytes) }),
      });
      await expectUnavailable(started, fin);
      expect(await dd.ledger()).toEqual(before);
      expect(await call(dd.app, 'GET', `/upload/${id}`, { token: dd.token })).toMatchObject({
        status: 200,
        body: { state: 'Pending' },
      });
      relay.up();
      expect(
        await call(dd.app, 'POST', `/upload/${id}/finalize`, { token: dd.token, body: { content_hash: sha(bytes) } }),
      ).toMatchObject({ status: 200, body: { state: 'Completed' } });
      expect((await dd.ledger()).charged).toContain(`${sha(bytes)}:${bytes.length}`);
    } finally {
      await dd.close();
    }
  });

  it("an object deleted behind the server's back is an error, never an empty 200; blobs verify names it and exits 1", async () => {
    relay.up();
    const bytes = pattern(5000, 3);
    const hash = await d.upload(bytes);
    expect((await runCli(['blobs', 'verify'], { ...d.env, SVC_S3_ENDPOINT: s3.endpoint })).code).toBe(0);
    const raw = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: S3RVER_KEY,
    });
    await raw.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: `lib/blobs/${hash.slice(0, 2)}/${hash}` }));
    const stray = pattern(10, 4);
    await raw.send(
      new PutObjectCommand({
        Bucket: s3.bucket,
        Key: `lib/blobs/${sha(stray).slice(0, 2)}/${sha(stray)}`,
        Body: stray,
      }),
    );
    raw.destroy();
    const r = await d.get(hash);
    expect(r.status).toBe(500);
    expect(((await r.json()) as { code: string }).code).toBe('error.internal');
    const v = await runCli(['blobs', 'verify'], { ...d.env, SVC_S3_ENDPOINT: s3.endpoint });
    expect(v.code).toBe(1);
    expect(v.out).toContain(`missing object: ${hash} (5000 bytes in the ledger)`);
    expect(v.out).toContain(`object without a ledger entry: ${sha(stray)} (10 bytes)`);
  });
});

describe("a blob deleted behind the server's back on the filesystem", { timeout: 60_000 }, () => {
  it('downloads answer an error, not 200 empty; blobs verify names it (and a stray file) and exits 1', async () => {
    const d = await deployment({});
    try {
      const bytes = pattern(3000, 5);
      const hash = await d.upload(bytes);
      expect(await runCli(['blobs', 'verify'], d.env)).toMatchObject({
        code: 0,
        out: expect.stringContaining('they agree'),
      });
      await rm(join(d.dataDir, 'blobs', 'blobs', hash.slice(0, 2), hash));
      const stray = pattern(9, 6);
      await mkdir(join(d.dataDir, 'blobs', 'blobs', sha(stray).slice(0, 2)), { recursive: true });
      await writeFile(join(d.dataDir, 'blobs', 'blobs', sha(stray).slice(0, 2), sha(stray)), stray);
      const r = await d.get(hash);
      expect(r.status).toBe(500);
      expect(((await r.json()) as { code: string }).code).toBe('error.internal');
      const head = await call(d.app, 'HEAD', `/v1/blobs/${hash}`, { token: d.token });
      expect(head.status).toBe(500);
      const v = await runCli(['blobs', 'verify'], d.env);
      expect(v.code).toBe(1);
      expect(v.out).toContain(`missing object: ${hash} (3000 bytes in the ledger)`);
      expect(v.out).toContain(`object without a ledger entry: ${sha(stray)} (9 bytes)`);
    } finally {
      await d.close();
    }
  });
});
