import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '@strongroom/core';
import { MemoryBlobStore } from '@strongroom/core/testing';
import { testServer, type TestServer } from '@strongroom/tests';
import { DeviceKeys, IdentityKey, StrongroomClient } from './index.js';

// The download helper against a real server over loopback: the proxied path (memory store), and a
// store that hands out presigned URLs (a stand-in object store on its own port), followed by itself.

const PASSWORD = 'correct horse battery staple';
let n = 0;
const address = () => `dl${++n}-${Math.random().toString(36).slice(2, 8)}@example.org`;

async function bytesOf(body: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(body).arrayBuffer());
}

/** A store whose blobs a client fetches from "the bucket": a local HTTP server serving them by URL, ranges included. */
class PresigningStore extends MemoryBlobStore {
  server: Server | null = null;
  base = '';
  seen: IncomingHttpHeaders[] = [];
  tamper = false;
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.seen.push(req.headers);
      const hash = new URL(req.url!, 'http://x').pathname.slice('/bucket/'.length);
      let bytes = this.blobs.get(hash);
      if (bytes === undefined) return void res.writeHead(404).end();
      if (this.tamper) bytes = bytes.map((b) => b ^ 1);
      const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
      if (m) {
        const start = Number(m[1]);
        const end = m[2] === '' ? bytes.length - 1 : Math.min(Number(m[2]), bytes.length - 1);
        res.writeHead(206, {
          'content-range': `bytes ${start}-${end}/${bytes.length}`,
          'content-length': String(end - start + 1),
        });
        return void res.end(bytes.subarray(start, end + 1));
      }
      res.writeHead(200, { 'content-length': String(bytes.length) });
      res.end(bytes);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  async presignGet(contentHash: string, ttlS: number): Promise<string> {
    return `${this.base}/bucket/${contentHash}?ttl=${ttlS}&sig=stand-in`;
  }
  stop(): Promise<void> {
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

let s: TestServer | null = null;
let store: PresigningStore | null = null;
afterEach(async () => {
  await s?.close();
  await store?.stop();
  s = null;
  store = null;
});

/** A signed-in client with a published directory, holding one uploaded blob. */
async function withBlob(server: TestServer, bytes: Uint8Array) {
  const client = new StrongroomClient({ baseUrl: server.baseUrl });
  await client.register(address(), PASSWORD);
  const device = DeviceKeys.generate('phone-1');
  await client.publishDirectory(
    IdentityKey.generate().signDirectory(client.accountId!, 1, [
      device.entry(Math.floor(server.clock.now() / 1000) - 60),
    ]),
  );
  const up = await client.upload(bytes, { deviceId: 'phone-1' });
  return { client, up };
}

const blob = () => {
  const b = new Uint8Array(100_000);
  for (let i = 0; i < b.length; i++) b[i] = (i * 7 + n) & 0xff;
  return b;
};

describe('StrongroomClient.download', () => {
  it('streams a blob through the server: whole (hash-checked), by range, by suffix; through a share link without a token', async () => {
    s = await testServer();
    const bytes = blob();
    const { client, up } = await withBlob(s, bytes);
    const whole = await client.download(up.contentHash);
    expect(whole).toMatchObject({ status: 200, size: bytes.length, start: 0, end: bytes.length - 1 });
    expect(sha256Hex(await bytesOf(whole.body))).toBe(up.contentHash);
    const part = await client.download(up.contentHash, { range: { start: 10, end: 19 } });
    expect(part).toMatchObject({ status: 206, size: bytes.length, start: 10, end: 19 });
    expect(await bytesOf(part.body)).toEqual(bytes.subarray(10, 20));
    const tail = await client.download(up.contentHash, { range: { suffix: 5 } });
    expect(await bytesOf(tail.body)).toEqual(bytes.subarray(bytes.length - 5));
    const open = await client.download(up.contentHash, { range: { start: bytes.length - 3 } });
    expect(await bytesOf(open.body)).toEqual(bytes.subarray(bytes.length - 3));

    const link = await client.api.POST('/v1/links', {
      body: { kind: 'share', asset_ids: [up.assetId!], wrapped_key: 'd3JhcHBlZA' },
    });
    const viewer = new StrongroomClient({ baseUrl: s.baseUrl });
    const shown = await viewer.download(up.contentHash, { linkId: link.data!.link_id });
    expect(sha256Hex(await bytesOf(shown.body))).toBe(up.contentHash);
  });

  it('refusals reject with the problem code: another account, an unknown hash, a range past the end', async () => {
    s = await testServer();
    const bytes = blob();
    const { client, up } = await withBlob(s, bytes);
    const other = new StrongroomClient({ baseUrl: s.baseUrl });
    await other.register(address(), PASSWORD);
    await expect(other.download(up.contentHash)).rejects.toMatchObject({
      name: 'StrongroomError',
      code: 'error.not_found',
    });
    await expect(client.download('0'.repeat(64))).rejects.toMatchObject({ code: 'error.not_found' });
    await expect(client.download(up.contentHash, { range: { start: bytes.length } })).rejects.toMatchObject({
      code: 'error.request.range_not_satisfiable',
    });
    await expect(
      new StrongroomClient({ baseUrl: s.baseUrl }).download(up.contentHash, { linkId: 'A'.repeat(22) }),
    ).rejects.toMatchObject({ code: 'error.not_found' });
  });

  it('follows a 307 to a presigned URL by itself, never sending it the token; a ranged download the server serves itself', async () => {
    store = new PresigningStore();
    await store.start();
    s = await testServer({}, {}, { blobs: store });
    const bytes = blob();
    const { client, up } = await withBlob(s, bytes);
    // The server answers a redirect, not bytes...
    const raw = await fetch(`${s.baseUrl}/v1/blobs/${up.contentHash}`, {
      redirect: 'manual',
      headers: { authorization: `Bearer ${client.session!.accessToken}`, 'x-svc-protocol': '2026-11-01' },
    });
    expect(raw.status).toBe(307);
    expect(raw.headers.get('location')).toBe(`${store.base}/bucket/${up.contentHash}?ttl=300&sig=stand-in`);
    expect(raw.headers.get('cache-control')).toBe('no-store');
    // ...and the client makes that invisible.
    const whole = await client.download(up.contentHash);
    expect(whole.status).toBe(200);
    expect(sha256Hex(await bytesOf(whole.body))).toBe(up.contentHash);
    const part = await client.download(up.contentHash, { range: { start: 100, end: 199 } });
    expect(part).toMatchObject({ status: 206, start: 100, end: 199, size: bytes.length });
    expect(await bytesOf(part.body)).toEqual(bytes.subarray(100, 200));
    // Only the whole download went to the URL: a Range is judged by the server against the content hash.
    expect(store.seen).toHaveLength(1);
    expect(store.seen[0]!.authorization).toBeUndefined();
    expect(store.seen[0]!['x-svc-act-as']).toBeUndefined();
    expect(store.seen[0]!.range).toBeUndefined();
    // A range past the end is this server's 416 problem.
    await expect(client.download(up.contentHash, { range: { start: 200_000 } })).rejects.toMatchObject({
      code: 'error.request.range_not_satisfiable',
    });
    expect(store.seen).toHaveLength(1);
    // Another account gets the 404, not a URL: the rule runs before any presigning.
    const other = new StrongroomClient({ baseUrl: s.baseUrl });
    await other.register(address(), PASSWORD);
    await expect(other.download(up.contentHash)).rejects.toMatchObject({ code: 'error.not_found' });
    expect(store.seen).toHaveLength(1);
    // Bytes that do not hash to the content hash fail the stream, wherever the redirect led.
    store.tamper = true;
    const bad = await client.download(up.contentHash);
    await expect(bytesOf(bad.body)).rejects.toMatchObject({ code: 'error.integrity' });
  });

  it("in a browser, which hides a manual redirect (opaqueredirect), the download follows it with the token for the server's own hop only", async () => {
    store = new PresigningStore();
    await store.start();
    s = await testServer({}, {}, { blobs: store });
    const bytes = blob();
    const { client, up } = await withBlob(s, bytes);
    const hops: { url: string; authorization: string | null }[] = [];
    // As a browser's fetch: a manual redirect comes back opaque (no status, no Location), and a
    // followed one drops Authorization when it crosses to another origin.
    const browserFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
      const request = new Request(input, init);
      hops.push({ url: request.url, authorization: request.headers.get('authorization') });
      const answer = await fetch(request, { redirect: 'manual' });
      if (answer.status >= 300 && answer.status < 400) {
        if ((init?.redirect ?? request.redirect) === 'manual')
          return Object.defineProperty(new Response(null, { status: 200 }), 'type', { value: 'opaqueredirect' });
        const onward = new URL(answer.headers.get('location')!, request.url);
        const headers = new Headers(request.headers);
        if (onward.origin !== new URL(request.url).origin) headers.delete('authorization');
        return browserFetch(onward, { headers, redirect: 'follow' });
      }
      return answer;
    };
    const browser = new StrongroomClient({ baseUrl: s.baseUrl, fetch: browserFetch, session: client.session! });
    const whole = await browser.download(up.contentHash);
    expect(whole.status).toBe(200);
    expect(sha256Hex(await bytesOf(whole.body))).toBe(up.contentHash);
    // The server's route twice (manual, then followed), both with the token; the store without it.
    const base = s.baseUrl;
    const server = hops.filter((h) => h.url.startsWith(base));
    expect(server.length).toBe(2);
    for (const h of server) expect(h.authorization).toMatch(/^Bearer /);
    expect(store.seen.at(-1)!.authorization).toBeUndefined();
  });
});
