import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLogger, TestDevice, TestIdentity } from '@strongroom/core/testing';
import { S3BlobStore } from '@strongroom/adapters-node/s3';
import {
  startFaultProxy,
  startInterceptingProxy,
  startTestS3,
  useS3rverCredentials,
  S3RVER_KEY,
  type FaultProxy,
  type InterceptingProxy,
  type TestS3,
} from '@strongroom/adapters-node/testing';
import { createApp } from '../../app.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores, type AppDeps, type Stores } from '../../deps.js';
import { call, listen, registerUser, type CallOptions } from '@strongroom/tests';
import { StagingSweeper } from '../../staging-sweep.js';

/**
 * Direct uploads in parts (S3 multipart) through the server's routes, against s3rver (which checks
 * every SigV4 signature) behind a TCP relay that can cut a transfer midway, and an intercepting
 * proxy that checks x-amz-checksum-sha256 as S3 does (s3rver does not). s3rver lacks ListParts,
 * ListMultipartUploads and AbortMultipartUpload: adapters-node/testing adds them from its own
 * upload directory (after its signature check).
 */

const BASE = { SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc' };
const MiB = 1024 * 1024;
const PART = 5 * MiB;
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');
const SEAL = Buffer.from('link-scoped public key').toString('base64url');

const pattern = (size: number, seed: number) => {
  const out = new Uint8Array(size);
  // No period within the upload: every part's bytes differ from every other's.
  for (let i = 0; i < size; i++) out[i] = Math.imul(i + seed * 0x1000_0000, 0x9e37_79b1) >>> 24;
  return out;
};
const partOf = (bytes: Uint8Array, n: number) => bytes.subarray((n - 1) * PART, Math.min(n * PART, bytes.length));

interface PartUrl {
  part_number: number;
  url: string;
  method: 'PUT';
  headers: Record<string, string>;
  expires_at: string;
}

describe('direct uploads in parts on S3 (s3rver behind a relay)', { timeout: 120_000 }, () => {
  let s3: TestS3;
  let inspector: InterceptingProxy;
  let relay: FaultProxy;
  let dataDir: string;
  let stores: Stores;
  let server: { baseUrl: string; close(): Promise<void> };
  let app: Awaited<ReturnType<typeof createApp>>;
  let deps: AppDeps;
  let token: string;
  let accountId: string;
  /** The bucket as the server sees it, without the relay: to look at open multipart uploads. */
  let bucket: S3BlobStore;
  let restoreCredentials = (): void => {};

  beforeAll(async () => {
    s3 = await startTestS3();
    inspector = await startInterceptingProxy(s3.endpoint, s3.bucket);
    relay = await startFaultProxy(inspector.endpoint);
    dataDir = await mkdtemp(join(tmpdir(), 's3-multipart-'));
    restoreCredentials = useS3rverCredentials();
    const config = readConfig({
      ...BASE,
      SVC_DATA_DIR: dataDir,
      SVC_BLOB_URL: `s3://${s3.bucket}/lib`,
      // Signed URLs name the relay, so a client's parts pass through it.
      SVC_S3_ENDPOINT: relay.endpoint,
      SVC_S3_FORCE_PATH_STYLE: 'true',
      SVC_S3_TIMEOUT_S: '5',
      SVC_S3_PART_BYTES: String(PART),
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
    bucket = new S3BlobStore({
      bucket: s3.bucket,
      prefix: 'lib',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { ...S3RVER_KEY },
    });
  }, 60_000);
  afterAll(async () => {
    bucket?.close();
    await server?.close();
    await stores?.close();
    await relay?.close();
    await inspector?.close();
    await s3?.stop();
    await rm(dataDir, { recursive: true, force: true });
    restoreCredentials();
  });

  const own: CallOptions = {};
  const as = (): CallOptions => ({ ...own, token });
  const create = async (size: number, contentHash?: string) => {
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
    return r.body as {
      upload_id: string;
      direct_put: unknown;
      multipart: { part_size: number; part_count: number } | null;
    };
  };
  const sign = async (id: string, bytes: Uint8Array, numbers: number[], who: CallOptions = as()) => {
    const r = await call(app, 'POST', `/upload/${id}/parts`, {
      ...who,
      body: { parts: numbers.map((n) => ({ part_number: n, sha256: sha(partOf(bytes, n)) })) },
    });
    expect(r.status).toBe(200);
    return (r.body as { parts: PartUrl[] }).parts;
  };
  /**
   * The client's PUT of a part: its status, or 0 when the connection closed unanswered. A store
   * refuses a bad signature or an unknown upload before it reads the body, answers and closes;
   * a client still sending may see the close before the answer (as on S3). So a refusal is any
   * 4xx or an unanswered close (`refused`), and the tests check after each that nothing arrived.
   */
  const send = (p: PartUrl, body: Uint8Array, headers = p.headers) =>
    new Promise<{ status: number }>((resolve) => {
      // A connection of its own: the relay picks what to cut by a connection's first request.
      const req = request(p.url, { method: p.method, headers, agent: false }, (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0 });
      });
      req.on('error', () => resolve({ status: 0 }));
      req.end(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    });
  const refused = (r: { status: number }) => r.status === 0 || (r.status >= 400 && r.status < 500);
  const finalize = (id: string, contentHash: string, who: CallOptions = as()) =>
    call(app, 'POST', `/upload/${id}/finalize`, { ...who, body: { content_hash: contentHash } });
  const ledger = async () =>
    (await stores.quota.listChargedBlobs(accountId)).map((b) => `${b.contentHash}:${b.size}`).sort();
  const used = async () => ((await call(app, 'GET', '/quota', { token })).body as { used: number }).used;
  const address = (hash: string) => `lib/blobs/${hash.slice(0, 2)}/${hash}`;
  const sweeper = () =>
    new StagingSweeper({
      uploads: deps.uploads,
      leases: stores.deployment,
      intervalMs: 3_600_000,
      clock: { now: () => Date.now() },
      logger: new MemoryLogger(),
    });

  it('above SVC_S3_PART_BYTES the upload goes in signed parts; a part cut midway by the relay is not counted; the upload resumes with only what is missing, and finalize checks and charges once', async () => {
    inspector.honour = false;
    const bytes = pattern(12 * MiB, 1);
    const hash = sha(bytes);
    const u = await create(bytes.length, hash);
    expect(u.direct_put).toBeNull();
    expect(u.multipart).toEqual({ part_size: PART, part_count: 3 });
    const urls = await sign(u.upload_id, bytes, [1, 2, 3]);
    expect(urls.map((p) => [p.part_number, p.headers])).toEqual(
      [1, 2, 3].map((n) => [
        n,
        { 'content-length': String(partOf(bytes, n).length), 'x-amz-checksum-sha256': b64(sha(partOf(bytes, n))) },
      ]),
    );
    const signed = new URL(urls[1]!.url);
    expect(signed.origin).toBe(relay.endpoint);
    expect(signed.pathname).toBe(`/${s3.bucket}/lib/staging/${u.upload_id}`);
    expect(signed.searchParams.get('partNumber')).toBe('2');
    expect(signed.searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;host;x-amz-checksum-sha256');
    expect(Number(signed.searchParams.get('X-Amz-Expires'))).toBe(900);

    const before = { ledger: await ledger(), used: await used() };
    expect((await send(urls[0]!, partOf(bytes, 1))).status).toBe(200);
    // The connection drops 2 MiB into part 2.
    const cut = relay.cutAfter('partNumber=2', 2 * MiB);
    expect(await send(urls[1]!, partOf(bytes, 2))).toEqual({ status: 0 });
    await cut;
    const held = await call(app, 'GET', `/upload/${u.upload_id}/parts`, as());
    expect(held.status).toBe(200);
    expect(held.body).toMatchObject({
      part_size: PART,
      part_count: 3,
      stored: [{ part_number: 1, size: PART }],
      missing: [2, 3],
    });
    // Finalize before every part arrived: 409 naming them, nothing charged, the parts kept.
    const early = await finalize(u.upload_id, hash);
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ code: 'error.conflict', missing_parts: [2, 3], missing_count: 2 });
    expect({ ledger: await ledger(), used: await used() }).toEqual(before);
    expect((await call(app, 'GET', `/upload/${u.upload_id}`, as())).body).toMatchObject({ state: 'Pending' });
    expect(await s3.keys(`lib/staging/${u.upload_id}`)).toEqual([]);

    // Resumed: only parts 2 and 3 are sent, through the same (still valid) URLs.
    expect((await send(urls[2]!, partOf(bytes, 3))).status).toBe(200);
    expect((await send(urls[1]!, partOf(bytes, 2))).status).toBe(200);
    expect((await call(app, 'GET', `/upload/${u.upload_id}/parts`, as())).body).toMatchObject({ missing: [] });
    const done = await finalize(u.upload_id, hash);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ state: 'Completed', declared_size: bytes.length });
    // The reservation became the charge of the 12 MiB, once.
    expect(await used()).toBe(before.used);
    expect(await ledger()).toEqual([...before.ledger, `${hash}:${bytes.length}`].sort());
    expect(await s3.keys(address(hash))).toEqual([address(hash)]);
    expect(await s3.keys(`lib/staging/${u.upload_id}`)).toEqual([]);
    expect(await bucket.multipart?.parts(u.upload_id)).toBeNull();
    const back = await fetch(`${server.baseUrl}/v1/blobs/${hash}?as=url`, {
      headers: { authorization: `Bearer ${token}`, 'x-svc-protocol': '2026-06-01' },
    });
    expect(back.status).toBe(200);
    const stored = await fetch(((await back.json()) as { url: string }).url);
    expect(sha(new Uint8Array(await stored.arrayBuffer()))).toBe(hash);
    // Idempotent; and a finished session takes no more parts.
    expect((await finalize(u.upload_id, hash)).status).toBe(200);
    expect(
      (
        await call(app, 'POST', `/upload/${u.upload_id}/parts`, {
          ...as(),
          body: { parts: [{ part_number: 1, sha256: hash }] },
        })
      ).status,
    ).toBe(409);
    expect(await ledger()).toEqual([...before.ledger, `${hash}:${bytes.length}`].sort());
  });

  it('a part URL reaches only its part of its upload, with its length and its bytes; a request outside the plan, or by anyone else, is refused', async () => {
    const bytes = pattern(12 * MiB, 2);
    const a = await create(bytes.length, sha(bytes));
    const b = await create(bytes.length, sha(bytes));
    const [p1] = await sign(a.upload_id, bytes, [1]);
    await sign(b.upload_id, bytes, [1]);
    // Another part number, or another upload's key, breaks the signature.
    const renumbered = new URL(p1!.url);
    renumbered.searchParams.set('partNumber', '2');
    expect(refused(await send({ ...p1!, url: renumbered.toString() }, partOf(bytes, 1)))).toBe(true);
    const moved = new URL(p1!.url);
    moved.pathname = moved.pathname.replace(a.upload_id, b.upload_id);
    expect(refused(await send({ ...p1!, url: moved.toString() }, partOf(bytes, 1)))).toBe(true);
    // Longer than signed: another Content-Length is refused by the signature.
    const longer = new Uint8Array(PART + 1);
    longer.set(partOf(bytes, 1));
    expect(refused(await send(p1!, longer, { ...p1!.headers, 'content-length': String(PART + 1) }))).toBe(true);
    // Without the checksum header: the signature names it.
    expect(refused(await send(p1!, partOf(bytes, 1), { 'content-length': String(PART) }))).toBe(true);
    // The signed length with other bytes: S3 refuses them by the signed checksum (BadDigest), which
    // s3rver ignores and the proxy in front of it checks as S3 does.
    inspector.honour = true;
    try {
      expect((await send(p1!, partOf(bytes, 2))).status).toBe(400);
    } finally {
      inspector.honour = false;
    }
    for (const id of [a.upload_id, b.upload_id])
      expect(((await call(app, 'GET', `/upload/${id}/parts`, as())).body as { stored: unknown[] }).stored).toEqual([]);

    // Outside the plan, a bad checksum, or a single PUT for an upload that goes in parts.
    const ask = (parts: unknown[]) => call(app, 'POST', `/upload/${a.upload_id}/parts`, { ...as(), body: { parts } });
    expect((await ask([{ part_number: 4, sha256: sha(bytes) }])).status).toBe(400);
    expect((await ask([{ part_number: 0, sha256: sha(bytes) }])).status).toBe(400);
    expect((await ask([{ part_number: 1, sha256: 'XYZ' }])).status).toBe(400);
    expect((await ask([])).status).toBe(400);
    expect((await call(app, 'POST', `/upload/${a.upload_id}/direct-put`, as())).status).toBe(409);
    // Another account does not see the session at all.
    const { access_token: other } = await registerUser(app);
    expect((await call(app, 'GET', `/upload/${a.upload_id}/parts`, { token: other })).status).toBe(404);
    expect(
      (
        await call(app, 'POST', `/upload/${a.upload_id}/parts`, {
          token: other,
          body: { parts: [{ part_number: 1, sha256: sha(bytes) }] },
        })
      ).status,
    ).toBe(404);
    // A small upload still gets one PUT, and no parts.
    const small = await create(1000);
    expect(small.multipart).toBeNull();
    expect(small.direct_put).not.toBeNull();
    expect((await call(app, 'GET', `/upload/${small.upload_id}/parts`, as())).status).toBe(409);
    for (const id of [a.upload_id, b.upload_id, small.upload_id])
      expect((await call(app, 'DELETE', `/upload/${id}`, as())).status).toBe(200);
  });

  it('parts whose whole is not the content_hash finalized: 409, nothing charged, nothing under a content address', async () => {
    const bytes = pattern(11 * MiB, 3);
    const claimed = sha(pattern(11 * MiB, 4));
    const before = { ledger: await ledger(), used: await used() };
    const u = await create(bytes.length);
    const urls = await sign(u.upload_id, bytes, [1, 2, 3]);
    for (const p of urls) expect((await send(p, partOf(bytes, p.part_number))).status).toBe(200);
    const wrong = await finalize(u.upload_id, claimed);
    expect(wrong.status).toBe(409);
    expect(await s3.keys(address(claimed))).toEqual([]);
    expect(await s3.keys(address(sha(bytes)))).toEqual([]);
    expect(await s3.keys(`lib/staging/${u.upload_id}`)).toEqual([]);
    expect(await ledger()).toEqual(before.ledger);
    // Only the open session's reservation is held, until it is cancelled.
    expect(await used()).toBe(before.used + bytes.length);
    expect((await call(app, 'DELETE', `/upload/${u.upload_id}`, as())).status).toBe(200);
    expect(await used()).toBe(before.used);
  });

  it("a guest drop goes in parts with its upload token, charged to the link's owner only at finalize", async () => {
    const albumId = (await call(app, 'POST', '/v1/albums', { ...as(), body: { device_id: 'phone' } })).body
      .album_id as string;
    const link = await call(app, 'POST', '/v1/links', {
      ...as(),
      body: { kind: 'upload', album_id: albumId, seal_key: SEAL },
    });
    expect(link.status).toBe(201);
    const bytes = pattern(10 * MiB + 17, 5);
    const drop = await call(app, 'POST', `/v1/links/${link.body.link_id}/drops`, {
      body: { declared_size: bytes.length, content_hash: sha(bytes) },
    });
    expect(drop.status).toBe(201);
    expect(drop.body.multipart).toEqual({ part_size: PART, part_count: 3 });
    const guest: CallOptions = { headers: { authorization: `Upload ${drop.body.upload_token}` } };
    const id = drop.body.upload_id as string;
    expect((await call(app, 'GET', `/upload/${id}/parts`, guest)).body).toMatchObject({
      part_size: PART,
      part_count: 3,
      missing: [1, 2, 3],
    });
    const before = await ledger();
    for (const p of await sign(id, bytes, [1, 2, 3], guest))
      expect((await send(p, partOf(bytes, p.part_number))).status).toBe(200);
    // Another drop's token reaches nothing of this one: refused as on PUT /upload/{id}.
    const other = await call(app, 'POST', `/v1/links/${link.body.link_id}/drops`, { body: { declared_size: 10 } });
    const intruder: CallOptions = { headers: { authorization: `Upload ${other.body.upload_token}` } };
    const put = await call(app, 'PUT', `/upload/${id}`, {
      ...intruder,
      raw: bytes.subarray(0, 10),
      contentType: 'application/octet-stream',
    });
    expect(put.status).toBe(401);
    expect((await call(app, 'GET', `/upload/${id}/parts`, intruder)).status).toBe(401);
    const intrude = await call(app, 'POST', `/upload/${id}/parts`, {
      ...intruder,
      body: { parts: [{ part_number: 1, sha256: sha(bytes) }] },
    });
    expect(intrude.status).toBe(401);
    expect((await finalize(id, sha(bytes), intruder)).status).toBe(401);
    expect(await ledger()).toEqual(before);
    expect((await finalize(id, sha(bytes), guest)).status).toBe(200);
    expect(await ledger()).toContain(`${sha(bytes)}:${bytes.length}`);
  });

  it('cancel aborts the parts; the staging sweep aborts those of a session no longer open and keeps an open one', async () => {
    const bytes = pattern(11 * MiB, 6);
    const cancelled = await create(bytes.length);
    const [c1] = await sign(cancelled.upload_id, bytes, [1]);
    expect((await send(c1!, partOf(bytes, 1))).status).toBe(200);
    expect(await bucket.multipart?.parts(cancelled.upload_id)).toHaveLength(1);
    expect((await call(app, 'DELETE', `/upload/${cancelled.upload_id}`, as())).status).toBe(200);
    expect(await bucket.multipart?.parts(cancelled.upload_id)).toBeNull();
    // The URL outlives the cancel, but its upload is gone: nothing more can land.
    expect(refused(await send(c1!, partOf(bytes, 1)))).toBe(true);
    expect(await bucket.multipart?.parts(cancelled.upload_id)).toBeNull();

    // Parts begun, then the bytes sent through the server instead and finalized: the parts are nobody's.
    const finished = await create(bytes.length);
    const [f1] = await sign(finished.upload_id, bytes, [1]);
    expect((await send(f1!, partOf(bytes, 1))).status).toBe(200);
    const proxied = await call(app, 'PUT', `/upload/${finished.upload_id}`, {
      token,
      raw: bytes,
      contentType: 'application/octet-stream',
    });
    expect(proxied.status).toBe(200);
    expect((await finalize(finished.upload_id, sha(bytes))).status).toBe(200);
    const open = await create(bytes.length);
    const [o2] = await sign(open.upload_id, bytes, [2]);
    expect((await send(o2!, partOf(bytes, 2))).status).toBe(200);
    expect(await bucket.multipart?.parts(finished.upload_id)).toHaveLength(1);

    const swept = await sweeper().tick();
    expect(swept).toMatchObject({ outcome: 'swept' });
    expect(await bucket.multipart?.parts(finished.upload_id)).toBeNull();
    expect((await bucket.multipart?.parts(open.upload_id))?.map((p) => p.partNumber)).toEqual([2]);
    const left: string[] = [];
    for await (const id of bucket.multipart!.listOpen()) left.push(id);
    expect(left).toContain(open.upload_id);
    expect(left).not.toContain(finished.upload_id);
    expect(left).not.toContain(cancelled.upload_id);
    expect((await call(app, 'DELETE', `/upload/${open.upload_id}`, as())).status).toBe(200);
  });
});
