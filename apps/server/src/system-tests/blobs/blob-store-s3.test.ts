import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLogger, TestDevice, TestIdentity } from '@strongroom/core/testing';
import { FsBlobStore } from '@strongroom/adapters-node';
import { S3BlobStore } from '@strongroom/adapters-node/s3';
import { startTestS3, useS3rverCredentials, type TestS3 } from '@strongroom/adapters-node/testing';
import { createApp } from '../../app.js';
import { ConfigError, readConfig, type Config } from '../../config.js';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import { takeBackup } from '../../backup/take.js';
import { verifyBackup } from '../../backup/verify.js';
import { restoreBackup } from '../../backup/restore.js';
import { OBJECTS_FILE } from '../../backup/files.js';
import { openBlobStore } from '../../blob-store.js';
import { buildDeps, nodePlatform, openStores, type Stores } from '../../deps.js';
import { Upload, type HttpRequest } from 'tus-js-client';
import { call, listen, registerUser, VERSION } from '@strongroom/tests';

const BASE = { SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc' };
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

describe('SVC_BLOB_URL', () => {
  it('unset or file:// keeps blobs on the filesystem under the data dir', async () => {
    for (const url of [undefined, '', 'file://']) {
      const config = readConfig({ ...BASE, ...(url === undefined ? {} : { SVC_BLOB_URL: url }) });
      expect(config.blobStore).toEqual({ kind: 'file' });
      expect((await openBlobStore(config)).blobs).toBeInstanceOf(FsBlobStore);
    }
  });

  it('s3://bucket/prefix with the SVC_S3_* settings names a bucket', async () => {
    const config = readConfig({
      ...BASE,
      SVC_BLOB_URL: 's3://media-eu/strongroom/prod/',
      SVC_S3_ENDPOINT: 'https://s3.example.net/',
      SVC_S3_REGION: 'eu-central-1',
      SVC_S3_FORCE_PATH_STYLE: 'true',
      SVC_S3_TIMEOUT_S: '4',
    });
    expect(config.blobStore).toEqual({
      kind: 's3',
      bucket: 'media-eu',
      prefix: 'strongroom/prod',
      endpoint: 'https://s3.example.net',
      region: 'eu-central-1',
      forcePathStyle: true,
      timeoutMs: 4000,
      direct: true,
      putUrlTtlS: 900,
      partBytes: 67_108_864,
    });
    const opened = await openBlobStore(config);
    expect(opened.blobs).toBeInstanceOf(S3BlobStore);
    expect(opened.blobs.backupMode).toBe('manifest');
    opened.close();
    expect(readConfig({ ...BASE, SVC_BLOB_URL: 's3://media-eu' }).blobStore).toEqual({
      kind: 's3',
      bucket: 'media-eu',
      prefix: '',
      endpoint: null,
      region: 'us-east-1',
      forcePathStyle: false,
      timeoutMs: 10_000,
      direct: true,
      putUrlTtlS: 900,
      partBytes: 67_108_864,
    });
    expect(readConfig({ ...BASE, SVC_BLOB_URL: 's3://media-eu', SVC_S3_DIRECT: 'false' }).blobStore).toMatchObject({
      direct: false,
    });
    expect(readConfig({ ...BASE, SVC_BLOB_URL: 's3://media-eu', SVC_S3_PUT_URL_S: '120' }).blobStore).toMatchObject({
      putUrlTtlS: 120,
    });
    expect(readConfig({ ...BASE, SVC_BLOB_URL: 's3://media-eu' }).blobStore).toMatchObject({ partBytes: 67_108_864 });
    expect(
      readConfig({ ...BASE, SVC_BLOB_URL: 's3://media-eu', SVC_S3_PART_BYTES: '5242880' }).blobStore,
    ).toMatchObject({ partBytes: 5_242_880 });
    expect(readConfig({ ...BASE }).stagingSweepMs).toBe(3_600_000);
    expect(readConfig({ ...BASE, SVC_STAGING_SWEEP_S: '60' }).stagingSweepMs).toBe(60_000);
    expect(readConfig({ ...BASE, SVC_BLOB_URL: 's3://media-eu', AWS_REGION: 'ap-south-1' }).blobStore).toMatchObject({
      region: 'ap-south-1',
    });
  });

  it('refuses what it cannot mean, naming the variable', () => {
    const bad: Record<string, string>[] = [
      { SVC_BLOB_URL: 'https://bucket.example/x' },
      { SVC_BLOB_URL: 's3://' },
      { SVC_BLOB_URL: 's3://Upper_Case' },
      { SVC_BLOB_URL: 's3://bucket/../up' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_ENDPOINT: 'ftp://x' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_ENDPOINT: 'https://x/path' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_FORCE_PATH_STYLE: 'yes' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_REGION: 'Europe West' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_TIMEOUT_S: '0' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_DIRECT: 'no' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_PUT_URL_S: '0' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_PUT_URL_S: '604801' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_PUT_URL_S: '15m' },
      { SVC_S3_PUT_URL_S: '900' },
      // S3's part limits: 5 MiB to 5 GiB.
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_PART_BYTES: '5242879' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_PART_BYTES: '5368709121' },
      { SVC_BLOB_URL: 's3://bucket', SVC_S3_PART_BYTES: '64MiB' },
      { SVC_S3_PART_BYTES: '67108864' },
      { SVC_STAGING_SWEEP_S: '0' },
      { SVC_STAGING_SWEEP_S: 'hourly' },
      // A bucket setting without SVC_BLOB_URL would silently keep blobs on local disk.
      { SVC_S3_ENDPOINT: 'https://s3.example.net' },
    ];
    for (const env of bad) expect(() => readConfig({ ...BASE, ...env }), JSON.stringify(env)).toThrow(ConfigError);
  });
});

describe('a server whose blobs live in an S3 bucket (s3rver on loopback)', { timeout: 60_000 }, () => {
  let s3: TestS3;
  let dataDir: string;
  let stores: Stores;
  let config: Config;
  let server: { baseUrl: string; close(): Promise<void> };
  let app: Awaited<ReturnType<typeof createApp>>;
  let restoreCredentials = (): void => {};

  beforeAll(async () => {
    s3 = await startTestS3();
    dataDir = await mkdtemp(join(tmpdir(), 's3-server-'));
    // Credentials reach the store through the SDK's standard chain (here: the environment).
    restoreCredentials = useS3rverCredentials();
    config = readConfig({
      ...BASE,
      SVC_DATA_DIR: dataDir,
      SVC_BLOB_URL: `s3://${s3.bucket}/lib`,
      SVC_S3_ENDPOINT: s3.endpoint,
      SVC_S3_FORCE_PATH_STYLE: 'true',
      SVC_S3_TIMEOUT_S: '2',
    });
    stores = await openStores(config);
    app = createApp(await buildDeps(config, stores, { ...nodePlatform(), logger: new MemoryLogger() }));
    server = await listen(app);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await stores?.close();
    await s3?.stop();
    await rm(dataDir, { recursive: true, force: true });
    restoreCredentials();
  });

  it('an upload lands as an object under the content address; with the store stopped, the bytes are refused 503 within the bound', async () => {
    const { access_token: token } = await registerUser(app);
    const accountId = (await call(app, 'GET', '/v1/auth/profile', { token })).body as { account_id: string };
    const dir = await call(app, 'PUT', '/v1/devices/directory', {
      token,
      cbor: new TestIdentity(accountId.account_id).signDirectory(accountId.account_id, 1, [new TestDevice('phone')]),
    });
    expect(dir.status).toBeLessThan(300);
    const bytes = new Uint8Array(4096).map((_, i) => i % 199);
    const up = await call(app, 'POST', '/upload', {
      token,
      body: { declared_size: bytes.length, kind: 'original', device_id: 'phone' },
    });
    expect(up.status).toBe(201);
    const id = (up.body as { upload_id: string }).upload_id;
    expect(
      (await call(app, 'PUT', `/upload/${id}`, { token, raw: bytes, contentType: 'application/octet-stream' })).status,
    ).toBe(200);
    // Carried by the server: into a key of its own (no URL reaches it) and its seal, never the staging key.
    expect((await s3.keys('lib/')).map((k) => k.replace(/\.[0-9a-f]{16}$/, '.*'))).toEqual([
      `lib/received/${id}.*`,
      `lib/received/${id}.seal`,
    ]);
    expect(
      (await call(app, 'POST', `/upload/${id}/finalize`, { token, body: { content_hash: sha(bytes) } })).status,
    ).toBe(200);
    expect(await s3.keys('lib/')).toEqual([`lib/blobs/${sha(bytes).slice(0, 2)}/${sha(bytes)}`]);
    expect(await stores.blobs.has(sha(bytes))).toBe(true);

    // A backup of this deployment lists the object rather than looking for it on local disk.
    const target = join(dataDir, '..', `${dataDir.split('/').pop()}-backup`);
    try {
      // Encrypted to a recipient, opened with its identity.
      const identity = await generateX25519Identity();
      const opener = {
        identities: [identity],
        identityFile: 'the test identity',
        passphrase: null,
        passphraseFile: null,
      };
      const report = await takeBackup(config, target, {
        now: () => Date.now(),
        sealing: { kind: 'recipients', recipients: [await identityToRecipient(identity)] },
      });
      expect(report.info.blob_mode).toBe('manifest');
      expect(await readFile(join(target, OBJECTS_FILE), 'utf8')).toBe(`${sha(bytes)} ${bytes.length}\n`);
      // verify-backup checks the listed objects in the store configured; without one it says so.
      const verified = await verifyBackup(target, { envKey: config.secretKey, objects: stores.blobs, opener });
      await verified.dispose();
      expect(verified.blobs).toEqual([{ contentHash: sha(bytes), size: bytes.length }]);
      await expect(verifyBackup(target, { envKey: config.secretKey, opener })).rejects.toMatchObject({
        problem: { cause: expect.stringContaining('set SVC_BLOB_URL') },
      });
      // It restores into an empty data directory: the database and key come back, the objects stay where they are.
      const restoredDir = `${target}-restored`;
      try {
        const restored = await restoreBackup({ ...config, dataDir: restoredDir }, target, {
          opener,
          clock: { now: () => Date.now() },
        });
        expect(restored.backup.info.blob_mode).toBe('manifest');
        // The key came from SVC_SECRET_KEY, so only the database is written; no blobs directory.
        expect((await readdir(restoredDir)).sort()).toEqual(['strongroom.db']);
      } finally {
        await rm(restoredDir, { recursive: true, force: true });
      }
      // An object gone from the store since the backup: verify names it and fails.
      await stores.blobs.remove(sha(bytes));
      await expect(
        verifyBackup(target, { envKey: config.secretKey, objects: stores.blobs, opener }),
      ).rejects.toMatchObject({
        problem: { file: `object ${sha(bytes)}`, cause: expect.stringContaining('missing from the object store') },
      });
    } finally {
      await rm(target, { recursive: true, force: true });
    }

    await s3.stop();
    const other = new Uint8Array(100).fill(3);
    const up2 = await call(app, 'POST', '/upload', {
      token,
      body: { declared_size: other.length, kind: 'original', device_id: 'phone' },
    });
    expect(up2.status).toBe(201);
    const started = Date.now();
    const put = await call(app, 'PUT', `/upload/${(up2.body as { upload_id: string }).upload_id}`, {
      token,
      raw: other,
      contentType: 'application/octet-stream',
    });
    expect(put.status).toBe(503);
    expect(put.headers.get('content-type')).toContain('application/problem+json');
    expect((put.body as { code: string }).code).toBe('error.store.unavailable');
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe('resumable (tus) uploads to a server whose blobs live in an S3 bucket (s3rver on loopback)', {
  timeout: 60_000,
}, () => {
  let s3: TestS3;
  let dataDir: string;
  let stores: Stores;
  let server: { baseUrl: string; close(): Promise<void> };
  let app: Awaited<ReturnType<typeof createApp>>;
  let restoreCredentials = (): void => {};

  beforeAll(async () => {
    s3 = await startTestS3();
    dataDir = await mkdtemp(join(tmpdir(), 's3-tus-'));
    restoreCredentials = useS3rverCredentials();
    const config = readConfig({
      ...BASE,
      SVC_DATA_DIR: dataDir,
      SVC_BLOB_URL: `s3://${s3.bucket}/lib`,
      SVC_S3_ENDPOINT: s3.endpoint,
      SVC_S3_FORCE_PATH_STYLE: 'true',
      SVC_S3_TIMEOUT_S: '5',
    });
    stores = await openStores(config);
    app = createApp(await buildDeps(config, stores, { ...nodePlatform(), logger: new MemoryLogger() }));
    server = await listen(app);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await stores?.close();
    await s3?.stop();
    await rm(dataDir, { recursive: true, force: true });
    restoreCredentials();
  });

  it('tus-js-client uploads through the server to the bucket, is cut off, resumes, and only the blob stays', async () => {
    const { access_token: token } = await registerUser(app);
    const me = ((await call(app, 'GET', '/v1/auth/profile', { token })).body as { account_id: string }).account_id;
    expect(
      (
        await call(app, 'PUT', '/v1/devices/directory', {
          token,
          cbor: new TestIdentity(me).signDirectory(me, 1, [new TestDevice('phone')]),
        })
      ).status,
    ).toBeLessThan(300);
    // Above the store's 8 MiB part size: each run is itself a multipart upload to the bucket.
    const data = new Uint8Array(randomBytes(20 * 1024 * 1024));
    const headers = { Authorization: `Bearer ${token}`, 'X-Svc-Protocol': VERSION };
    const send = (options: { endpoint?: string; uploadUrl?: string; stopAfter?: number }) =>
      new Promise<{ url: string; offsets: number[] }>((resolve, reject) => {
        const offsets: number[] = [];
        const up: Upload = new Upload(Buffer.from(data), {
          ...(options.endpoint ? { endpoint: options.endpoint } : { uploadUrl: options.uploadUrl! }),
          headers,
          metadata: { device_id: 'phone' },
          chunkSize: 12 * 1024 * 1024,
          retryDelays: [],
          onBeforeRequest: (req: HttpRequest) =>
            void (req.getMethod() === 'PATCH' && offsets.push(Number(req.getHeader('Upload-Offset')))),
          onChunkComplete: (_c, accepted) => {
            if (options.stopAfter !== undefined && accepted >= options.stopAfter)
              void up.abort().then(() => resolve({ url: up.url!, offsets }));
          },
          onSuccess: () => resolve({ url: up.url!, offsets }),
          onError: reject,
        });
        up.start();
      });
    const first = await send({ endpoint: `${server.baseUrl}/upload-tus`, stopAfter: 12 * 1024 * 1024 });
    const id = first.url.split('/').pop()!;
    expect((await s3.keys('lib/received/')).filter((k) => k.includes(`${id}_`) && !k.endsWith('.seal'))).toHaveLength(
      1,
    );
    const second = await send({ uploadUrl: first.url });
    expect(second.offsets).toEqual([12 * 1024 * 1024]);
    const done = await call(app, 'POST', `/upload/${id}/finalize`, { token, body: { content_hash: sha(data) } });
    expect(done.status).toBe(200);
    // The runs went once assembled; the staged whole goes after the finalize's ledger write.
    expect((await s3.keys('lib/staging/')).filter((k) => k.includes(id))).toEqual([]);
    expect((await s3.keys('lib/received/')).filter((k) => k.includes(id))).toEqual([]);
    expect(await stores.blobs.digest(sha(data))).toEqual({ size: data.length, sha256: sha(data) });
  });
});
