import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLogger, TestDevice, TestIdentity } from '@strongroom/core/testing';
import { startTestS3, useS3rverCredentials, type CorsRule, type TestS3 } from '@strongroom/adapters-node/testing';
import { createApp } from '../../app.js';
import { readConfig } from '../../config.js';
import { buildDeps, nodePlatform, openStores, type Stores } from '../../deps.js';
import { call, fetchCall, listen, registerUser, VERSION } from '@strongroom/tests';

/**
 * Downloads as a browser app makes them: a page on its own origin calls the API (listed in
 * SVC_CORS_ORIGINS) with its token, downloads a blob whole and by range, and, on S3, fetches the
 * bucket itself through the 307 (the browser then sends `Origin: null`) and through `?as=url`, with
 * the bucket CORS rule exactly as docs/object-storage.md gives it. The rule is checked over plain HTTP first;
 * the same in Debian's headless Chromium when it is installed.
 */

const BASE = { SVC_BASE_URL: 'http://127.0.0.1:8080', SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc' };
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const chromiumThere = existsSync(CHROMIUM);
if (!chromiumThere)
  console.log(
    `blob-browser.test: the Chromium part is skipped, no Chromium at ${CHROMIUM} (install Debian's chromium)`,
  );

/** The bucket CORS rule as docs/object-storage.md gives it (the JSON block after "The bucket's CORS rule"). */
function readmeCorsRules(): CorsRule[] {
  const readme = readFileSync(new URL('../../../../../docs/object-storage.md', import.meta.url), 'utf8');
  const from = readme.indexOf("The bucket's CORS rule");
  const block = /```json\n([\s\S]*?)```/.exec(readme.slice(from));
  if (from < 0 || block === null) throw new Error('docs/object-storage.md gives no bucket CORS rule');
  return (JSON.parse(block[1]!) as { CORSRules: CorsRule[] }).CORSRules;
}

/** One raw HTTP request (Node's fetch will not send `Origin: null` as a browser does). */
function raw(
  url: string,
  method: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const r = request(url, { method, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    r.on('error', reject);
    r.end();
  });
}

interface Backend {
  readonly name: 'filesystem' | 's3';
  api: string;
  token: string;
  hash: string;
  bytes: Uint8Array;
  close(): Promise<void>;
}

/** The page's origin: a server of its own that serves one empty page. */
async function appOrigin(): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>app</title>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // Another host name than the API's 127.0.0.1: a cross-origin app, as in production.
  return {
    origin: `http://localhost:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

async function backend(name: Backend['name'], app: string, s3: TestS3 | null): Promise<Backend> {
  const dataDir = await mkdtemp(join(tmpdir(), `browser-${name}-`));
  const env = {
    ...BASE,
    SVC_DATA_DIR: dataDir,
    SVC_CORS_ORIGINS: app,
    ...(s3
      ? { SVC_BLOB_URL: `s3://${s3.bucket}/lib`, SVC_S3_ENDPOINT: s3.endpoint, SVC_S3_FORCE_PATH_STYLE: 'true' }
      : {}),
  };
  const config = readConfig(env);
  const stores: Stores = await openStores(config);
  const server = createApp(await buildDeps(config, stores, { ...nodePlatform(), logger: new MemoryLogger() }));
  const net = await listen(server);
  const { access_token: token } = await registerUser(server);
  const id = ((await call(server, 'GET', '/v1/auth/profile', { token })).body as { account_id: string }).account_id;
  expect(
    (
      await call(server, 'PUT', '/v1/devices/directory', {
        token,
        cbor: new TestIdentity(id).signDirectory(id, 1, [new TestDevice('phone')]),
      })
    ).status,
  ).toBeLessThan(300);
  const bytes = new Uint8Array(randomBytes(5000));
  const u = await call(server, 'POST', '/upload', {
    token,
    body: { declared_size: bytes.length, kind: 'original', device_id: 'phone' },
  });
  const uploadId = (u.body as { upload_id: string }).upload_id;
  expect(
    (await call(server, 'PUT', `/upload/${uploadId}`, { token, raw: bytes, contentType: 'application/octet-stream' }))
      .status,
  ).toBe(200);
  expect(
    (await call(server, 'POST', `/upload/${uploadId}/finalize`, { token, body: { content_hash: sha(bytes) } })).status,
  ).toBe(200);
  return {
    name,
    api: net.baseUrl,
    token,
    hash: sha(bytes),
    bytes,
    close: async () => {
      await net.close();
      await stores.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

describe('browser downloads with the bucket CORS rule of docs/object-storage.md', { timeout: 120_000 }, () => {
  let s3: TestS3;
  let app: Awaited<ReturnType<typeof appOrigin>>;
  const backends: Backend[] = [];
  let restoreCredentials = (): void => {};

  beforeAll(async () => {
    s3 = await startTestS3('strongroom-browser', { cors: readmeCorsRules() });
    restoreCredentials = useS3rverCredentials();
    app = await appOrigin();
    backends.push(await backend('filesystem', app.origin, null), await backend('s3', app.origin, s3));
  }, 60_000);
  afterAll(async () => {
    for (const b of backends) await b.close();
    await app?.close();
    await s3?.stop();
    restoreCredentials();
  });

  it("the rule lets a browser read the bucket after the redirect (Origin: null) and from the app's own origin, ranges and their headers included", async () => {
    const s3b = backends.find((b) => b.name === 's3')!;
    const r = await fetchCall(s3b.api, 'GET', `/v1/blobs/${s3b.hash}?as=url`, { token: s3b.token });
    const { url } = r.body as { url: string };
    for (const origin of ['null', app.origin]) {
      // The preflight for what the redirected request still carries (the app's own X-Svc-* headers).
      const pre = await raw(url, 'OPTIONS', {
        origin,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'x-svc-protocol, range',
      });
      expect([origin, pre.status]).toEqual([origin, 200]);
      expect(pre.headers['access-control-allow-origin']).toBe('*');
      const got = await raw(url, 'GET', { origin, range: 'bytes=0-9' });
      expect([origin, got.status]).toEqual([origin, 206]);
      expect(got.headers['access-control-allow-origin']).toBe('*');
      const exposed = String(got.headers['access-control-expose-headers']).toLowerCase().split(/,\s*/);
      expect(exposed).toEqual(expect.arrayContaining(['content-range', 'content-length', 'accept-ranges', 'etag']));
    }
  });

  it.skipIf(!chromiumThere)(
    'in headless Chromium: whole and ranged downloads on both stores, ?as=url on S3, and no token ever sent to the bucket',
    async () => {
      const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
      try {
        for (const b of backends) {
          const page = await browser.newPage();
          // Every request to the bucket with the headers the network stack sent (Origin included).
          const sent: Promise<{ url: string; authorization: string | undefined; origin: string | undefined }>[] = [];
          page.on('request', (req) => {
            if (req.url().startsWith(s3.endpoint))
              sent.push(
                req.allHeaders().then((h) => ({ url: req.url(), authorization: h.authorization, origin: h.origin })),
              );
          });
          await page.goto(`${app.origin}/`);
          const seen = await page.evaluate(
            async ({ api, token, hash, version }) => {
              const headers = { authorization: `Bearer ${token}`, 'x-svc-protocol': version };
              const hex = async (buf: ArrayBuffer) =>
                [...new Uint8Array(await crypto.subtle.digest('SHA-256', buf))]
                  .map((x) => x.toString(16).padStart(2, '0'))
                  .join('');
              const whole = await fetch(`${api}/v1/blobs/${hash}`, { headers });
              const wholeHash = await hex(await whole.arrayBuffer());
              const part = await fetch(`${api}/v1/blobs/${hash}`, { headers: { ...headers, range: 'bytes=10-19' } });
              const partBytes = [...new Uint8Array(await part.arrayBuffer())];
              const asUrl = await fetch(`${api}/v1/blobs/${hash}?as=url`, { headers });
              let direct = null;
              if (asUrl.status === 200) {
                const { url } = (await asUrl.json()) as { url: string };
                const r = await fetch(url, { headers: { range: 'bytes=100-109' } });
                direct = {
                  status: r.status,
                  contentRange: r.headers.get('content-range'),
                  bytes: [...new Uint8Array(await r.arrayBuffer())],
                };
              }
              return {
                whole: {
                  status: whole.status,
                  redirected: whole.redirected,
                  hash: wholeHash,
                  etag: whole.headers.get('etag'),
                },
                part: {
                  status: part.status,
                  contentRange: part.headers.get('content-range'),
                  etag: part.headers.get('etag'),
                  bytes: partBytes,
                },
                asUrl: asUrl.status,
                direct,
              };
            },
            { api: b.api, token: b.token, hash: b.hash, version: VERSION },
          );
          const where = b.name;
          const toBucket = await Promise.all(sent);
          expect([where, seen.whole.status, seen.whole.hash]).toEqual([where, 200, b.hash]);
          expect([where, seen.whole.redirected]).toEqual([where, b.name === 's3']);
          expect([where, seen.part]).toEqual([
            where,
            {
              status: 206,
              contentRange: `bytes 10-19/${b.bytes.length}`,
              etag: `"${b.hash}"`,
              bytes: [...b.bytes.subarray(10, 20)],
            },
          ]);
          if (b.name === 's3') {
            expect(seen.asUrl).toBe(200);
            expect(seen.direct).toEqual({
              status: 206,
              contentRange: `bytes 100-109/${b.bytes.length}`,
              bytes: [...b.bytes.subarray(100, 110)],
            });
            // The redirect went there with Origin: null, ?as=url with the app's origin; never with the token.
            expect(toBucket.length).toBeGreaterThanOrEqual(2);
            expect(toBucket.map((r) => r.authorization)).toEqual(toBucket.map(() => undefined));
            expect(toBucket.map((r) => r.origin)).toEqual(expect.arrayContaining(['null', app.origin]));
          } else {
            expect([where, seen.asUrl, seen.direct]).toEqual([where, 409, null]);
            expect(toBucket).toEqual([]);
          }
          await page.close();
        }
      } finally {
        await browser.close();
      }
    },
  );
});
