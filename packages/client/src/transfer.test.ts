import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '@strongroom/core';
import { S3BlobStore } from '@strongroom/adapters-node/s3';
import { S3RVER_KEY, startTestS3, type TestS3 } from '@strongroom/adapters-node/testing';
import { testServer, type TestServer } from '@strongroom/tests';
import { DeviceKeys, IdentityKey, StrongroomClient } from './index.js';

// upload() and download() against a server on each store: the filesystem-like memory store (no
// direct transfers: everything through the server) and an S3 bucket (s3rver on loopback, checking
// SigV4): bytes straight to the bucket with the presigned PUT, back through the 307.

const PASSWORD = 'correct horse battery staple';
let n = 0;
const address = () => `tr${++n}-${Math.random().toString(36).slice(2, 8)}@example.org`;
const bytesOf = async (body: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(body).arrayBuffer());
const blob = (size: number, seed: number) => new Uint8Array(size).map((_, i) => (i * 13 + seed) & 0xff);

async function signedIn(server: TestServer, fetchImpl?: typeof fetch): Promise<StrongroomClient> {
  const client = new StrongroomClient({ baseUrl: server.baseUrl, ...(fetchImpl ? { fetch: fetchImpl } : {}) });
  await client.register(address(), PASSWORD);
  const device = DeviceKeys.generate('phone-1');
  await client.publishDirectory(
    IdentityKey.generate().signDirectory(client.accountId!, 1, [
      device.entry(Math.floor(server.clock.now() / 1000) - 60),
    ]),
  );
  return client;
}

let s3: TestS3;
let bucket: S3BlobStore;
const servers: TestServer[] = [];
beforeAll(async () => {
  s3 = await startTestS3();
  bucket = new S3BlobStore({
    bucket: s3.bucket,
    prefix: 'client',
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_KEY,
  });
  servers.push(await testServer(), await testServer({}, {}, { blobs: bucket }));
}, 30_000);
afterAll(async () => {
  for (const s of servers) await s.close();
  bucket?.close();
  await s3?.stop();
});

describe.each([
  ['memory store (proxied)', 0, 'proxied'],
  ['S3 bucket (direct)', 1, 'direct'],
] as const)('StrongroomClient upload and download on a %s', (_name, index, expected) => {
  it('uploads by the path the server offers and reads back the same bytes, whole and by range', async () => {
    const server = servers[index]!;
    const client = await signedIn(server);
    const bytes = blob(200_000, index);
    const up = await client.upload(bytes, { deviceId: 'phone-1' });
    expect(up).toMatchObject({ state: 'Completed', transfer: expected, contentHash: sha256Hex(bytes) });
    if (expected === 'direct')
      expect(await s3.keys('client/blobs/')).toContain(`client/blobs/${up.contentHash.slice(0, 2)}/${up.contentHash}`);
    const whole = await client.download(up.contentHash);
    expect(sha256Hex(await bytesOf(whole.body))).toBe(up.contentHash);
    const part = await client.download(up.contentHash, { range: { start: 1000, end: 1999 } });
    expect(part).toMatchObject({ status: 206, start: 1000, end: 1999, size: bytes.length });
    expect(await bytesOf(part.body)).toEqual(bytes.subarray(1000, 2000));
    // The same bytes again are a merge, by either path.
    expect((await client.upload(bytes, { deviceId: 'phone-1', direct: false })).state).toBe('Merged');
  });
});

describe('StrongroomClient on a bucket it cannot reach', () => {
  it('falls back to sending through the server when the presigned PUT cannot reach the store', async () => {
    const server = servers[1]!;
    const blocked: typeof fetch = (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      return url.startsWith(s3.endpoint) ? Promise.reject(new TypeError('fetch failed')) : fetch(input, init);
    };
    const client = await signedIn(server, blocked);
    const bytes = blob(5000, 9);
    expect(await client.upload(bytes, { deviceId: 'phone-1' })).toMatchObject({
      state: 'Completed',
      transfer: 'proxied',
    });
    await expect(
      (await signedIn(server)).upload(blob(10, 1), { deviceId: 'phone-1', direct: false }),
    ).resolves.toMatchObject({ transfer: 'proxied' });
  });
});
