import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLogger, TestDevice, TestIdentity } from '@strongroom/core/testing';
import { startTestS3, useS3rverCredentials, type TestS3 } from '@strongroom/adapters-node/testing';
import { createApp } from '../../app.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores, type AppDeps, type Stores } from '../../deps.js';
import { call, listen, registerUser, testServer, VERSION } from '@strongroom/tests';
import { StagingSweeper } from '../../staging-sweep.js';
import { WRAPPED } from '@strongroom/tests/access';

/**
 * Direct transfers on an S3 bucket (s3rver on loopback, which checks every SigV4 signature): the
 * client sends bytes to the presigned URL POST /upload answers and fetches blobs through the 307,
 * and finalize checks what arrived before anything is charged.
 */

const BASE = { SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc' };
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

interface DirectPut {
  url: string;
  method: 'PUT';
  headers: Record<string, string>;
  expires_at: string;
}
interface Created {
  upload_id: string;
  expires_at: string;
  direct_put: DirectPut | null;
}

describe('direct transfers on S3 (s3rver on loopback)', { timeout: 60_000 }, () => {
  let s3: TestS3;
  let dataDir: string;
  let stores: Stores;
  let server: { baseUrl: string; close(): Promise<void> };
  let app: Awaited<ReturnType<typeof createApp>>;
  let deps: AppDeps;
  let token: string;
  let accountId: string;
  let restoreCredentials = (): void => {};

  beforeAll(async () => {
    s3 = await startTestS3();
    dataDir = await mkdtemp(join(tmpdir(), 's3-direct-'));
    restoreCredentials = useS3rverCredentials();
    const config = readConfig({
      ...BASE,
      SVC_DATA_DIR: dataDir,
      SVC_BLOB_URL: `s3://${s3.bucket}/lib`,
      SVC_S3_ENDPOINT: s3.endpoint,
      SVC_S3_FORCE_PATH_STYLE: 'true',
      SVC_S3_TIMEOUT_S: '2',
    });
    stores = await openStores(config);
    deps = await buildDeps(config, stores, { ...nodePlatform(), logger: new MemoryLogger() });
    app = createApp(deps);
    server = await listen(app);
    ({ access_token: token } = await registerUser(app));
    accountId = ((await call(app, 'GET', '/v1/auth/profile', { token })).body as { account_id: string }).account_id;
    const dir = await call(app, 'PUT', '/v1/devices/directory', {
      token,
      cbor: new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]),
    });
    expect(dir.status).toBeLessThan(300);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await stores?.close();
    await s3?.stop();
    await rm(dataDir, { recursive: true, force: true });
    restoreCredentials();
  });

  const create = async (size: number, contentHash?: string): Promise<Created> => {
    const r = await call(app, 'POST', '/upload', {
      token,
      body: {
        declared_size: size,
        kind: 'original',
        device_id: 'phone',
        ...(contentHash ? { content_hash: contentHash } : {}),
      },
    });
    expect(r.status).toBe(201);
    return r.body as Created;
  };
  const send = (d: DirectPut, body: Uint8Array, headers = d.headers) =>
    fetch(d.url, { method: d.method, headers, body: new Uint8Array(body) });
  const ledger = async () =>
    (await stores.quota.listChargedBlobs(accountId)).map((b) => `${b.contentHash}:${b.size}`).sort();
  const used = async () => ((await call(app, 'GET', '/quota', { token })).body as { used: number }).used;

  it("POST /upload answers a PUT URL pinned to the declared size and the announced hash, within the session's lifetime", async () => {
    const bytes = new Uint8Array(3000).map((_, i) => i % 251);
    const u = await create(bytes.length, sha(bytes));
    const d = u.direct_put!;
    expect(d.method).toBe('PUT');
    expect(d.url.startsWith(`${s3.endpoint}/${s3.bucket}/lib/staging/${u.upload_id}?`)).toBe(true);
    expect(d.headers).toEqual({
      'content-length': '3000',
      'x-amz-checksum-sha256': Buffer.from(sha(bytes), 'hex').toString('base64'),
    });
    expect(Date.parse(d.expires_at)).toBeLessThanOrEqual(Date.parse(u.expires_at));
    const signed = new URL(d.url).searchParams;
    expect(signed.get('X-Amz-SignedHeaders')).toBe('content-length;host;x-amz-checksum-sha256');
    // At most SVC_S3_PUT_URL_S (900 s by default), though the session lives a day.
    expect(Number(signed.get('X-Amz-Expires'))).toBe(900);
    expect(Date.parse(d.expires_at) - Date.now()).toBeLessThanOrEqual(900_000);
    // The store refuses another length, and a body sent without the signed checksum header.
    expect((await send(d, bytes.subarray(0, 2999), { ...d.headers, 'content-length': '2999' })).status).toBe(403);
    expect((await send(d, bytes, { 'content-length': '3000' })).status).toBe(403);

    const before = await used();
    expect((await send(d, bytes)).status).toBe(200);
    const done = await call(app, 'POST', `/upload/${u.upload_id}/finalize`, {
      token,
      body: { content_hash: sha(bytes) },
    });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ state: 'Completed', declared_size: 3000 });
    // The reservation became the charge of what arrived.
    expect(await used()).toBe(before);
    expect(await ledger()).toContain(`${sha(bytes)}:3000`);
    expect(await s3.keys(`lib/staging/${u.upload_id}`)).toEqual([]);

    // Downloads: a 307 to a presigned GET that is not cached, which serves the bytes and ranges.
    const get = await fetch(`${server.baseUrl}/v1/blobs/${sha(bytes)}`, {
      headers: { authorization: `Bearer ${token}`, 'x-svc-protocol': VERSION },
      redirect: 'manual',
    });
    expect(get.status).toBe(307);
    expect(get.headers.get('cache-control')).toBe('no-store');
    const location = get.headers.get('location')!;
    expect(location.startsWith(`${s3.endpoint}/${s3.bucket}/lib/blobs/`)).toBe(true);
    expect(Number(new URL(location).searchParams.get('X-Amz-Expires'))).toBeLessThanOrEqual(300);
    const followed = await fetch(location);
    expect(sha(new Uint8Array(await followed.arrayBuffer()))).toBe(sha(bytes));
    // The presigned answer carries the server's own Cache-Control and Content-Type.
    expect(followed.headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
    expect(followed.headers.get('content-type')).toBe('application/octet-stream');
    const part = await fetch(location, { headers: { range: 'bytes=10-19' } });
    expect(part.status).toBe(206);
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(10, 20));
    // A range or a precondition is judged here against the content hash, never by the store.
    const own = { authorization: `Bearer ${token}`, 'x-svc-protocol': VERSION };
    const tag = `"${sha(bytes)}"`;
    const asked = async (headers: Record<string, string>) =>
      fetch(`${server.baseUrl}/v1/blobs/${sha(bytes)}`, { headers: { ...own, ...headers }, redirect: 'manual' });
    const ranged = await asked({ range: 'bytes=10-19' });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get('etag')).toBe(tag);
    expect(new Uint8Array(await ranged.arrayBuffer())).toEqual(bytes.subarray(10, 20));
    for (const [headers, status] of [
      [{ range: 'bytes=50-10' }, 200],
      [{ range: 'bytes=0-5,10-20' }, 200],
      [{ range: 'bytes=0-5', 'if-range': '"zzz"' }, 200],
      [{ 'if-modified-since': new Date(Date.now() + 86_400_000).toUTCString() }, 200],
      [{ 'if-none-match': '"another"' }, 200],
    ] as const) {
      const r = await asked(headers);
      expect([JSON.stringify(headers), r.status, r.headers.get('etag'), r.headers.get('cache-control')]).toEqual([
        JSON.stringify(headers),
        status,
        tag,
        'private, max-age=31536000, immutable',
      ]);
      expect(sha(new Uint8Array(await r.arrayBuffer()))).toBe(sha(bytes));
    }
    // HEAD is answered by the server itself (a GET-signed URL would refuse a HEAD).
    const head = await call(app, 'HEAD', `/v1/blobs/${sha(bytes)}`, { token });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('3000');
  });

  it('bytes of another hash, or nothing at all: finalize refuses before anything is charged, and keeps nothing', async () => {
    const before = { ledger: await ledger(), used: await used() };
    const meant = new Uint8Array(64).fill(1);
    const sentInstead = new Uint8Array(64).fill(2);
    const u = await create(64);
    expect(u.direct_put!.headers).toEqual({ 'content-length': '64' });
    expect((await send(u.direct_put!, sentInstead)).status).toBe(200);
    const wrong = await call(app, 'POST', `/upload/${u.upload_id}/finalize`, {
      token,
      body: { content_hash: sha(meant) },
    });
    expect(wrong.status).toBe(409);
    expect(await s3.keys(`lib/staging/${u.upload_id}`)).toEqual([]);
    expect(await s3.keys('lib/blobs/')).not.toContain(`lib/blobs/${sha(meant).slice(0, 2)}/${sha(meant)}`);
    expect(await s3.keys('lib/blobs/')).not.toContain(`lib/blobs/${sha(sentInstead).slice(0, 2)}/${sha(sentInstead)}`);
    const nothing = await call(app, 'POST', `/upload/${u.upload_id}/finalize`, {
      token,
      body: { content_hash: sha(meant) },
    });
    expect(nothing.status).toBe(409);
    expect(await ledger()).toEqual(before.ledger);
    // Only the open session's reservation is held; cancelling it gives that back too.
    expect(await used()).toBe(before.used + 64);
    expect((await call(app, 'DELETE', `/upload/${u.upload_id}`, { token })).status).toBe(200);
    expect(await used()).toBe(before.used);
  });

  it('the proxied PUT /upload/{id} keeps working beside the URL', async () => {
    const bytes = new Uint8Array(500).fill(7);
    const u = await create(bytes.length);
    expect(u.direct_put).not.toBeNull();
    expect(
      (await call(app, 'PUT', `/upload/${u.upload_id}`, { token, raw: bytes, contentType: 'application/octet-stream' }))
        .status,
    ).toBe(200);
    expect(
      (await call(app, 'POST', `/upload/${u.upload_id}/finalize`, { token, body: { content_hash: sha(bytes) } }))
        .status,
    ).toBe(200);
    expect(await ledger()).toContain(`${sha(bytes)}:500`);
  });

  const sweeper = () =>
    new StagingSweeper({
      uploads: deps.uploads,
      leases: stores.deployment,
      intervalMs: 3_600_000,
      clock: { now: () => Date.now() },
      logger: new MemoryLogger(),
    });

  it('after a cancel, 20 MB sent through the old URL never reach a content address, charge nothing, and the staging sweep removes them', async () => {
    const bytes = new Uint8Array(20 * 1024 * 1024).map((_, i) => (i * 7) % 256);
    const before = { ledger: await ledger(), used: await used() };
    const u = await create(bytes.length);
    expect((await call(app, 'DELETE', `/upload/${u.upload_id}`, { token })).status).toBe(200);
    // The URL is still within its own lifetime: the bucket takes the bytes.
    expect((await send(u.direct_put!, bytes)).status).toBe(200);
    expect(await s3.keys(`lib/staging/${u.upload_id}`)).toEqual([`lib/staging/${u.upload_id}`]);
    expect(
      (await call(app, 'POST', `/upload/${u.upload_id}/finalize`, { token, body: { content_hash: sha(bytes) } }))
        .status,
    ).toBe(409);
    expect((await call(app, 'POST', `/upload/${u.upload_id}/direct-put`, { token })).status).toBe(409);
    expect(await s3.keys(`lib/blobs/${sha(bytes).slice(0, 2)}/`)).not.toContain(
      `lib/blobs/${sha(bytes).slice(0, 2)}/${sha(bytes)}`,
    );
    expect({ ledger: await ledger(), used: await used() }).toEqual(before);
    // One process sweeps at a time: a second one finds the lease held and skips.
    const [a, b] = [sweeper(), sweeper()];
    const [first, second] = await Promise.all([a.tick(), b.tick()]);
    expect([first.outcome, second.outcome].sort()).toEqual(['skipped', 'swept']);
    expect(await s3.keys(`lib/staging/${u.upload_id}`)).toEqual([]);
    expect(await s3.keys(`lib/received/${u.upload_id}.`)).toEqual([]);
  });

  it('POST /upload/{id}/direct-put renews the URL while the session waits for bytes; another account gets 404, a finished session 409', async () => {
    const bytes = new Uint8Array(700).fill(3);
    const u = await create(bytes.length, sha(bytes));
    const renewed = await call(app, 'POST', `/upload/${u.upload_id}/direct-put`, { token });
    expect(renewed.status).toBe(200);
    const d = renewed.body as DirectPut;
    expect(d).toMatchObject({ method: 'PUT', headers: u.direct_put!.headers });
    expect(d.url.startsWith(`${s3.endpoint}/${s3.bucket}/lib/staging/${u.upload_id}?`)).toBe(true);
    expect(Number(new URL(d.url).searchParams.get('X-Amz-Expires'))).toBeLessThanOrEqual(900);
    expect(Date.parse(d.expires_at)).toBeLessThanOrEqual(Date.parse(u.expires_at));
    const other = await registerUser(app);
    expect((await call(app, 'POST', `/upload/${u.upload_id}/direct-put`, { token: other.access_token })).status).toBe(
      404,
    );
    expect((await call(app, 'POST', `/upload/${u.upload_id}/direct-put`, {})).status).toBe(401);
    expect((await send(d, bytes)).status).toBe(200);
    expect(
      (await call(app, 'POST', `/upload/${u.upload_id}/finalize`, { token, body: { content_hash: sha(bytes) } }))
        .status,
    ).toBe(200);
    const after = await call(app, 'POST', `/upload/${u.upload_id}/direct-put`, { token });
    expect(after.status).toBe(409);
    expect(after.body).toMatchObject({ code: 'error.conflict' });
  });

  it('?as=url answers the presigned URL as JSON on both blob GETs, which a client fetches with no token', async () => {
    const bytes = new Uint8Array(1200).map((_, i) => (i * 13) % 256);
    const u = await create(bytes.length);
    expect((await send(u.direct_put!, bytes)).status).toBe(200);
    expect(
      (await call(app, 'POST', `/upload/${u.upload_id}/finalize`, { token, body: { content_hash: sha(bytes) } }))
        .status,
    ).toBe(200);
    const link = await call(app, 'POST', '/v1/links', {
      token,
      body: { kind: 'share', asset_ids: [u.upload_id], wrapped_key: WRAPPED },
    });
    expect(link.status).toBe(201);
    const linkId = (link.body as { link_id: string }).link_id;
    for (const [path, auth] of [
      [`/v1/blobs/${sha(bytes)}`, { token }],
      [`/v1/links/${linkId}/blobs/${sha(bytes)}`, {}],
    ] as const) {
      const r = await call(app, 'GET', `${path}?as=url`, auth);
      expect([path, r.status]).toEqual([path, 200]);
      expect(r.headers.get('cache-control')).toBe('no-store');
      const { url, expires_at } = r.body as { url: string; expires_at: string };
      expect(url.startsWith(`${s3.endpoint}/${s3.bucket}/lib/blobs/`)).toBe(true);
      expect(Date.parse(expires_at) - Date.now()).toBeLessThanOrEqual(300_000);
      const whole = await fetch(url);
      expect(sha(new Uint8Array(await whole.arrayBuffer()))).toBe(sha(bytes));
      const part = await fetch(url, { headers: { range: 'bytes=100-199' } });
      expect(part.status).toBe(206);
      expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(100, 200));
    }
    // Refused as the GET itself is: an unknown hash, another account's blob.
    expect((await call(app, 'GET', `/v1/blobs/${'0'.repeat(64)}?as=url`, { token })).status).toBe(404);
    expect(
      (await call(app, 'GET', `/v1/blobs/${sha(bytes)}?as=url`, { token: (await registerUser(app)).access_token }))
        .status,
    ).toBe(404);
    expect((await call(app, 'GET', `/v1/blobs/${sha(bytes)}?as=file`, { token })).status).toBe(400);
  });
});

describe('direct transfers on the filesystem store', () => {
  it('no direct uploads and no URLs: direct-put and ?as=url are 409 error.conflict, the GET serves the bytes', async () => {
    const t = await testServer();
    try {
      const user = await registerUser(t.app);
      const me = (
        (await call(t.app, 'GET', '/v1/auth/profile', { token: user.access_token })).body as { account_id: string }
      ).account_id;
      expect(
        (
          await call(t.app, 'PUT', '/v1/devices/directory', {
            token: user.access_token,
            cbor: new TestIdentity(me).signDirectory(me, 1, [new TestDevice('phone')]),
          })
        ).status,
      ).toBeLessThan(300);
      const bytes = new Uint8Array(300).fill(4);
      const u = await call(t.app, 'POST', '/upload', {
        token: user.access_token,
        body: { declared_size: 300, kind: 'original', device_id: 'phone' },
      });
      expect(u.body).toMatchObject({ direct_put: null });
      const id = (u.body as Created).upload_id;
      expect(await call(t.app, 'POST', `/upload/${id}/direct-put`, { token: user.access_token })).toMatchObject({
        status: 409,
        body: { code: 'error.conflict' },
      });
      expect(
        (
          await call(t.app, 'PUT', `/upload/${id}`, {
            token: user.access_token,
            raw: bytes,
            contentType: 'application/octet-stream',
          })
        ).status,
      ).toBe(200);
      expect(
        (
          await call(t.app, 'POST', `/upload/${id}/finalize`, {
            token: user.access_token,
            body: { content_hash: sha(bytes) },
          })
        ).status,
      ).toBe(200);
      const link = await call(t.app, 'POST', '/v1/links', {
        token: user.access_token,
        body: { kind: 'share', asset_ids: [id], wrapped_key: WRAPPED },
      });
      const linkId = (link.body as { link_id: string }).link_id;
      expect(await call(t.app, 'GET', `/v1/blobs/${sha(bytes)}?as=url`, { token: user.access_token })).toMatchObject({
        status: 409,
        body: { code: 'error.conflict' },
      });
      expect(await call(t.app, 'GET', `/v1/links/${linkId}/blobs/${sha(bytes)}?as=url`, {})).toMatchObject({
        status: 409,
        body: { code: 'error.conflict' },
      });
      expect((await call(t.app, 'GET', `/v1/blobs/${sha(bytes)}`, { token: user.access_token })).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});
