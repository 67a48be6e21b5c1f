import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsBlobStore } from '@strongroom/adapters-node';
import { S3BlobStore } from '@strongroom/adapters-node/s3';
import { S3RVER_KEY, startTestS3, type TestS3 } from '@strongroom/adapters-node/testing';
import { testServer, type TestServer } from '@strongroom/tests';
import {
  bundleForBrowser,
  CHROMIUM,
  CHROMIUM_FLAGS,
  chromiumThere,
  installPackedClient,
  pageServer,
  readmeBucketCors,
} from './testing/packed-app.js';

/**
 * The packed client as a browser app uses it: a page bundled from the installed tarball, on an
 * origin of its own (listed in SVC_CORS_ORIGINS), in headless Chromium. One device signs in,
 * publishes its directory and uploads; a second device (a fresh browser context: no storage shared)
 * signs in, finds the upload through sync(), and downloads it whole and by range. On the filesystem
 * store and on S3 (s3rver with the README's bucket CORS rule, where the upload goes straight to the
 * bucket and the whole download follows the 307), and the bucket never sees the access token.
 * Every assertion is on what the page reports, or on what the browser sent.
 */

const PASSWORD = 'correct horse battery staple';

const APP = `import { DeviceKeys, IdentityKey, StrongroomClient, StrongroomError } from '@strongroom/client';

const hex = async (bytes) =>
  [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((x) => x.toString(16).padStart(2, '0')).join('');
const report = (e) => ({ error: e instanceof StrongroomError ? e.code : String(e) });

window.firstDevice = async ({ api, address, password, notBefore, size }) => {
  try {
    const client = new StrongroomClient({ baseUrl: api });
    await client.register(address, password);
    const device = DeviceKeys.generate('browser-1');
    await client.publishDirectory(IdentityKey.generate().signDirectory(client.accountId, 1, [device.entry(notBefore)]));
    const bytes = new Uint8Array(size);
    for (let at = 0; at < size; at += 65536) crypto.getRandomValues(bytes.subarray(at, Math.min(size, at + 65536)));
    const up = await client.upload(bytes, { deviceId: 'browser-1' });
    return {
      uploadId: up.uploadId,
      state: up.state,
      transfer: up.transfer,
      contentHash: up.contentHash,
      hashHere: await hex(bytes),
      sample: [...bytes.subarray(1000, 1100)],
    };
  } catch (e) {
    return report(e);
  }
};

window.secondDevice = async ({ api, address, password }) => {
  try {
    const client = new StrongroomClient({ baseUrl: api });
    const signedIn = await client.signIn(address, password);
    const assets = [];
    for await (const page of client.sync({ limit: 10 }))
      for (const c of page.changes) if (c.kind === 'asset' && c.op !== 'remove') assets.push(c.record);
    const hash = assets[0].blobs.find((b) => b.role === 'original').content_hash;
    // Whole first: Chromium's cache would otherwise fill a whole read around a cached range itself
    // (conditional ranged requests, answered by the server), and the redirect would go untried.
    const whole = await client.download(hash);
    const wholeBytes = await new Response(whole.body).arrayBuffer();
    const part = await client.download(hash, { range: { start: 1000, end: 1099 } });
    const partBytes = [...new Uint8Array(await new Response(part.body).arrayBuffer())];
    return {
      signedIn: signedIn.kind,
      assets: assets.map((a) => a.asset_id),
      hash,
      part: { status: part.status, start: part.start, end: part.end, size: part.size, bytes: partBytes },
      whole: { status: whole.status, size: whole.size, hash: await hex(wholeBytes) },
    };
  } catch (e) {
    return report(e);
  }
};
`;

interface Backend {
  readonly name: 'filesystem' | 's3';
  readonly server: TestServer;
}

let work: string;
let project: string;
let s3: TestS3;
let bucket: S3BlobStore;
let app: Awaited<ReturnType<typeof pageServer>>;
const backends: Backend[] = [];
const files = new Map<string, { type: string; body: string }>();

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sr-browser-'));
  // The page's origin first (another host name than the API's 127.0.0.1: cross-origin, as in production).
  app = await pageServer(files, 'localhost');
  s3 = await startTestS3('strongroom-browser-client', { cors: readmeBucketCors() });
  bucket = new S3BlobStore({
    bucket: s3.bucket,
    prefix: 'lib',
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_KEY,
  });
  const cors = { SVC_CORS_ORIGINS: app.origin };
  backends.push(
    { name: 'filesystem', server: await testServer(cors, {}, { blobs: new FsBlobStore(join(work, 'blobs')) }) },
    { name: 's3', server: await testServer(cors, {}, { blobs: bucket }) },
  );
  project = await installPackedClient(work);
  files.set('/', { type: 'text/html', body: '<!doctype html><title>app</title><script src="/app.js"></script>' });
  files.set('/app.js', { type: 'text/javascript', body: await bundleForBrowser(project, 'app-entry', APP) });
}, 300_000);

afterAll(async () => {
  for (const b of backends) await b.server.close();
  bucket?.close();
  await s3?.stop();
  await app?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(!chromiumThere)('the packed client in headless Chromium', { timeout: 180_000 }, () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it.each([
    ['filesystem', 'proxied'],
    ['s3', 'direct'],
  ] as const)(
    'on the %s store: one device uploads (%s), a second device (fresh storage) syncs and downloads whole and by range; the bucket never sees the token',
    async (name, transfer) => {
      const { server } = backends.find((b) => b.name === name)!;
      const address = `browser-${name}@example.org`;
      const toBucket: Promise<{ method: string; authorization: string | undefined }>[] = [];
      const device = async () => {
        const context = await browser.newContext();
        const page = await context.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(String(e)));
        page.on('request', (req) => {
          if (req.url().startsWith(s3.endpoint))
            toBucket.push(req.allHeaders().then((h) => ({ method: req.method(), authorization: h.authorization })));
        });
        await page.goto(`${app.origin}/`);
        return { context, page, errors };
      };

      const first = await device();
      const size = 300_000;
      const uploaded = (await first.page.evaluate(
        (args) => (window as unknown as { firstDevice(a: unknown): Promise<unknown> }).firstDevice(args),
        {
          api: server.baseUrl,
          address,
          password: PASSWORD,
          notBefore: Math.floor(server.clock.now() / 1000) - 60,
          size,
        },
      )) as Record<string, unknown>;
      expect(uploaded).toMatchObject({ state: 'Completed', transfer });
      expect(uploaded.contentHash).toBe(uploaded.hashHere);
      expect(first.errors).toEqual([]);
      await first.context.close();

      const second = await device();
      const seen = (await second.page.evaluate(
        (args) => (window as unknown as { secondDevice(a: unknown): Promise<unknown> }).secondDevice(args),
        { api: server.baseUrl, address, password: PASSWORD },
      )) as Record<string, unknown>;
      expect(seen).toEqual({
        signedIn: 'session',
        assets: [uploaded.uploadId],
        hash: uploaded.contentHash,
        part: { status: 206, start: 1000, end: 1099, size, bytes: uploaded.sample },
        whole: { status: 200, size, hash: uploaded.contentHash },
      });
      expect(second.errors).toEqual([]);
      await second.context.close();

      const requests = await Promise.all(toBucket);
      if (name === 's3') {
        // The upload's presigned PUT and the whole download's redirected GET went to the bucket.
        expect(requests.map((r) => r.method)).toEqual(expect.arrayContaining(['PUT', 'GET']));
        expect(requests.map((r) => r.authorization)).toEqual(requests.map(() => undefined));
      } else {
        expect(requests).toEqual([]);
      }
    },
  );
});
