import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  type PageFile,
  pageServer,
  documentedBucketCors,
} from './testing/packed-app.js';

/**
 * The packed client as a browser app uses it: a page bundled from the installed tarball, on an
 * origin of its own (listed in SVC_CORS_ORIGINS), in headless Chromium. One device signs in,
 * publishes its directory and uploads; a second device (a fresh browser context: no storage shared)
 * signs in, finds the upload through sync(), and downloads it whole and by range. On the filesystem
 * store and on S3 (s3rver with the bucket CORS rule docs/object-storage.md gives, where the upload goes straight to the
 * bucket and the whole download follows the 307), and the bucket never sees the access token.
 * Every assertion is on what the page reports, or on what the browser sent.
 */

const PASSWORD = 'correct horse battery staple';

const APP = `import { DeviceKeys, IdentityKey, StrongroomClient, StrongroomError } from '@strongroom/client';

const hex = async (bytes) =>
  [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((x) => x.toString(16).padStart(2, '0')).join('');
const report = (e) => ({ error: e instanceof StrongroomError ? e.code : String(e) });

/** A new account, signed in, with a directory naming one device (browser-1) from notBefore. */
const registeredDevice = async ({ api, address, password, notBefore }) => {
  const client = new StrongroomClient({ baseUrl: api });
  await client.register(address, password);
  const device = DeviceKeys.generate('browser-1');
  await client.publishDirectory(IdentityKey.generate().signDirectory(client.accountId, 1, [device.entry(notBefore)]));
  return client;
};

/** size random bytes (getRandomValues fills at most 64 KiB a call). */
const randomBytes = (size) => {
  const bytes = new Uint8Array(size);
  for (let at = 0; at < size; at += 65536) crypto.getRandomValues(bytes.subarray(at, Math.min(size, at + 65536)));
  return bytes;
};

window.firstDevice = async ({ api, address, password, notBefore, size }) => {
  try {
    const client = await registeredDevice({ api, address, password, notBefore });
    const bytes = randomBytes(size);
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

/** The big file as a Blob, fetched: the browser keeps its bytes in its own storage, not in the page. */
window.fetchBig = async () => {
  window.big = await (await fetch('/big')).blob();
  return window.big.size;
};

window.uploadBig = async ({ api, address, password, notBefore }) => {
  try {
    const client = await registeredDevice({ api, address, password, notBefore });
    let heap = performance.memory ? performance.memory.usedJSHeapSize : 0;
    const heapBefore = heap;
    const progress = [];
    const started = performance.now();
    const up = await client.upload(window.big, {
      deviceId: 'browser-1',
      onProgress: (p) => {
        progress.push(p.sent);
        if (performance.memory) heap = Math.max(heap, performance.memory.usedJSHeapSize);
      },
    });
    return {
      state: up.state,
      transfer: up.transfer,
      contentHash: up.contentHash,
      chunks: progress.length - 1,
      last: progress.at(-1),
      heapGrowth: heap - heapBefore,
      ms: Math.round(performance.now() - started),
    };
  } catch (e) {
    return report(e);
  }
};

/** A Blob above the server's part size: it goes to the bucket in parts, each with its own signed URL. */
window.uploadInParts = async ({ api, address, password, notBefore, size }) => {
  try {
    const client = await registeredDevice({ api, address, password, notBefore });
    const bytes = randomBytes(size);
    const progress = [];
    const up = await client.upload(new Blob([bytes]), { deviceId: 'browser-1', onProgress: (p) => progress.push(p.sent) });
    const back = await client.download(up.contentHash);
    return {
      state: up.state,
      transfer: up.transfer,
      contentHash: up.contentHash,
      hashHere: await hex(bytes),
      progress,
      back: await hex(await new Response(back.body).arrayBuffer()),
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

// Three times the bound below: a page that held the file whole could not pass.
const BIG_MIB = 200;
/** A file of `mib` MiB both sides can make: MiB k holds (i * 31 + k * 7) & 255 at i. */
function* bigFile(mib: number): Generator<Uint8Array> {
  for (let k = 0; k < mib; k++) {
    const part = new Uint8Array(1 << 20);
    for (let i = 0; i < part.length; i++) part[i] = (i * 31 + k * 7) & 255;
    yield part;
  }
}

interface Backend {
  readonly name: 'filesystem' | 's3' | 's3 in parts';
  readonly server: TestServer;
}

let work: string;
let project: string;
let s3: TestS3;
let bucket: S3BlobStore;
let partsBucket: S3BlobStore;
let app: Awaited<ReturnType<typeof pageServer>>;
const backends: Backend[] = [];
const files = new Map<string, PageFile>();

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sr-browser-'));
  // The page's origin first (another host name than the API's 127.0.0.1: cross-origin, as in production).
  app = await pageServer(files, 'localhost');
  s3 = await startTestS3('strongroom-browser-client', { cors: documentedBucketCors() });
  bucket = new S3BlobStore({
    bucket: s3.bucket,
    prefix: 'lib',
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_KEY,
  });
  partsBucket = new S3BlobStore({
    bucket: s3.bucket,
    prefix: 'parts',
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_KEY,
  });
  const cors = { SVC_CORS_ORIGINS: app.origin };
  // Parts of 5 MiB (S3's least), so a page's upload of a few parts goes in parts.
  const inParts = {
    ...cors,
    SVC_BLOB_URL: `s3://${s3.bucket}/parts`,
    SVC_S3_ENDPOINT: s3.endpoint,
    SVC_S3_FORCE_PATH_STYLE: 'true',
    SVC_S3_PART_BYTES: String(5 << 20),
  };
  backends.push(
    { name: 'filesystem', server: await testServer(cors, {}, { blobs: new FsBlobStore(join(work, 'blobs')) }) },
    { name: 's3', server: await testServer(cors, {}, { blobs: bucket }) },
    { name: 's3 in parts', server: await testServer(inParts, {}, { blobs: partsBucket }) },
  );
  project = await installPackedClient(work);
  files.set('/', { type: 'text/html', body: '<!doctype html><title>app</title><script src="/app.js"></script>' });
  files.set('/app.js', { type: 'text/javascript', body: await bundleForBrowser(project, 'app-entry', APP) });
  files.set('/big', { type: 'application/octet-stream', body: () => bigFile(BIG_MIB) });
}, 300_000);

afterAll(async () => {
  for (const b of backends) await b.server.close();
  bucket?.close();
  partsBucket?.close();
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

describe.skipIf(!chromiumThere)('a large Blob from a page, on a bucket that takes parts', { timeout: 180_000 }, () => {
  it('goes straight to the bucket in parts, each PUT with its signed headers and no token, and reads back whole', async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
    try {
      const { server } = backends.find((b) => b.name === 's3 in parts')!;
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      const toBucket: Promise<{ method: string; url: string; headers: Record<string, string> }>[] = [];
      page.on('request', (req) => {
        if (req.url().startsWith(s3.endpoint) && req.method() !== 'OPTIONS')
          toBucket.push(req.allHeaders().then((headers) => ({ method: req.method(), url: req.url(), headers })));
      });
      await page.goto(`${app.origin}/`);
      const MiB = 1 << 20;
      const size = 11 * MiB + 5;
      const result = (await page.evaluate(
        (args) => (window as unknown as { uploadInParts(a: unknown): Promise<unknown> }).uploadInParts(args),
        {
          api: server.baseUrl,
          address: 'browser-parts@example.org',
          password: PASSWORD,
          notBefore: Math.floor(server.clock.now() / 1000) - 60,
          size,
        },
      )) as Record<string, unknown>;
      expect(result).toMatchObject({ state: 'Completed', transfer: 'direct', progress: [0, 5 * MiB, 10 * MiB, size] });
      expect(result.contentHash).toBe(result.hashHere);
      expect(result.back).toBe(result.hashHere);
      expect(errors).toEqual([]);
      const requests = await Promise.all(toBucket);
      const parts = requests.filter((r) => r.method === 'PUT');
      expect(parts.map((r) => new URL(r.url).searchParams.get('partNumber'))).toEqual(['1', '2', '3']);
      for (const r of parts) {
        expect(r.headers.authorization).toBeUndefined();
        expect(r.headers['x-amz-checksum-sha256']).toMatch(/^[A-Za-z0-9+/]{43}=$/);
      }
      expect(requests.map((r) => r.headers.authorization)).toEqual(requests.map(() => undefined));
    } finally {
      await browser.close();
    }
  });
});

/** Process ids under `root` (itself included), from /proc. */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The command may hold spaces and parentheses: the parent id follows the last ')'.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const found = [root];
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of parent)
      if (found.includes(ppid) && !found.includes(pid)) {
        found.push(pid);
        grew = true;
      }
  }
  return found;
}

/** The renderer processes among `pids` (Chromium's page processes). */
const renderers = (pids: number[]) =>
  pids.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer');
    } catch {
      return false;
    }
  });

/** A /proc/PID/status figure in bytes (VmRSS now, VmHWM the peak since the last reset). */
function statusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) * 1024;
}

describe.skipIf(!chromiumThere || process.platform !== 'linux')(
  `a ${BIG_MIB} MiB Blob uploaded from a page in headless Chromium`,
  { timeout: 600_000 },
  () => {
    it("streams it: the page's renderer grows by a few chunks, not by the file", async () => {
      const MIB = BIG_MIB;
      const { server } = backends.find((b) => b.name === 'filesystem')!;
      // A browser of its own, so its processes (and only they) are known by their parent.
      const launched = await chromium.launchServer({
        executablePath: CHROMIUM,
        headless: true,
        args: [...CHROMIUM_FLAGS, '--js-flags=--expose-gc', '--enable-precise-memory-info'],
      });
      const remote = await chromium.connect(launched.wsEndpoint());
      try {
        const page = await remote.newPage();
        await page.goto(`${app.origin}/`);
        await page.evaluate(() => (globalThis as unknown as { gc(): void }).gc());
        // The page's renderer idle, its app loaded: growth is counted from here.
        const pids = renderers(descendants(launched.process().pid!));
        expect(pids.length).toBeGreaterThan(0);
        const before = new Map(pids.map((pid) => [pid, statusBytes(pid, 'VmRSS')]));
        for (const pid of pids) writeFileSync(`/proc/${pid}/clear_refs`, '5');
        const t0 = Date.now();
        expect(await page.evaluate(() => (window as unknown as { fetchBig(): Promise<number> }).fetchBig())).toBe(
          MIB << 20,
        );
        const fetched = Date.now() - t0;

        const result = (await page.evaluate(
          (args) => (window as unknown as { uploadBig(a: unknown): Promise<unknown> }).uploadBig(args),
          {
            api: server.baseUrl,
            address: 'browser-big@example.org',
            password: PASSWORD,
            notBefore: Math.floor(server.clock.now() / 1000) - 60,
          },
        )) as Record<string, number | string>;
        const growth = Math.max(...pids.map((pid) => statusBytes(pid, 'VmHWM') - before.get(pid)!));

        const expected = createHash('sha256');
        for (const part of bigFile(MIB)) expected.update(part);
        expect(result).toMatchObject({
          state: 'Completed',
          transfer: 'proxied',
          contentHash: expected.digest('hex'),
          chunks: MIB / 8,
          last: MIB << 20,
        });
        console.log(
          `${MIB} MiB Blob from a page: renderer peak RSS +${(growth / 2 ** 20).toFixed(1)} MiB, JS heap +${(
            Number(result.heapGrowth) / 2 ** 20
          ).toFixed(1)} MiB; the Blob fetched in ${fetched} ms, uploaded in ${result.ms} ms`,
        );
        expect(growth).toBeLessThan(64 * 2 ** 20);
      } finally {
        await remote.close();
        await launched.close();
      }
    });
  },
);
