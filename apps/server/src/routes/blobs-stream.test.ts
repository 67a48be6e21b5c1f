import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Argon2Hasher, FsBlobStore } from '@strongroom/adapters-node';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import type { BlobStore, QuotaPolicy } from '@strongroom/core';
import { FakeClock, MemoryLogger, SeededRandom } from '@strongroom/core/testing';
import { createApp } from '../app.js';
import { readConfig } from '../config.js';
import { buildDeps, type Stores } from '../deps.js';
import { call, listen, registerUser, testSeed, VERSION } from '@strongroom/tests';

/**
 * Downloads stream: a 256 MiB blob on the filesystem store goes out with flat memory, a HEAD opens
 * nothing, and a client that hangs up mid-download leaves no open file behind.
 */

const MiB = 1024 * 1024;
const SIZE = 256 * MiB;
const UNLIMITED: QuotaPolicy = {
  defaults: { soft: null, hard: null },
  graceMs: 1_000,
  federatedShare: 0.25,
  maxOpenUploads: 1000,
  followUpMs: 900_000,
  followUpOverdraft: 16_777_216,
};

async function* generated(size: number): AsyncIterable<Uint8Array> {
  for (let at = 0, i = 0; at < size; at += MiB, i++)
    yield new Uint8Array(Math.min(MiB, size - at)).fill((i * 37) & 0xff);
}

describe('blob downloads stream from the filesystem store', { timeout: 300_000 }, () => {
  let root: string;
  let base: string;
  let close: () => Promise<void>;
  let token: string;
  let hash: string;
  const reads = { n: 0 };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'blob-stream-'));
    const fs = new FsBlobStore(root);
    // Counts the reads the routes open, to show a HEAD opens none.
    const counted: BlobStore = {
      stage: (...a) => fs.stage(...a),
      commit: (...a) => fs.commit(...a),
      discard: (...a) => fs.discard(...a),
      readStaged: (...a) => fs.readStaged(...a),
      digest: (...a) => fs.digest(...a),
      has: (...a) => fs.has(...a),
      stat: (...a) => fs.stat(...a),
      list: () => fs.list(),
      listStaged: () => fs.listStaged(),
      remove: (...a) => fs.remove(...a),
      quarantine: (...a) => fs.quarantine(...a),
      unquarantine: (...a) => fs.unquarantine(...a),
      dropQuarantined: (...a) => fs.dropQuarantined(...a),
      listQuarantined: () => fs.listQuarantined(),
      quarantinedCopies: (...a) => fs.quarantinedCopies(...a),
      stream: (...a) => fs.stream(...a),
      backupMode: fs.backupMode,
      read: (h, range) => {
        reads.n++;
        return fs.read(h, range);
      },
    };
    const db = openSqliteDatabase(':memory:');
    const stores: Stores = { ...createSqlitePorts(db), blobs: counted, close: async () => void db.close() };
    const env = {
      SVC_BASE_URL: 'http://127.0.0.1:8080',
      SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
    };
    const deps = await buildDeps(readConfig(env), stores, {
      clock: new FakeClock(),
      random: new SeededRandom(testSeed()),
      logger: new MemoryLogger(),
      hasher: new Argon2Hasher(),
    });
    const app = createApp(deps);
    const server = await listen(app);
    base = server.baseUrl;
    close = async () => {
      await server.close();
      await stores.close();
    };
    const u = await registerUser(app);
    token = u.access_token;
    const accountId = (await call(app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
    // The blob and an asset referencing it, written through the ports (a 256 MiB PUT would only slow the test).
    const staged = (await fs.stage('big', generated(SIZE), SIZE))!;
    hash = staged.sha256;
    expect(await fs.commit('big', hash)).toBe('stored');
    const id = '01900000-0000-7000-8000-00000000b1b0';
    const opened = await stores.quota.openUpload(
      {
        id,
        uploaderId: accountId,
        kind: 'original',
        declaredSize: SIZE,
        contentHash: null,
        albumId: null,
        intentId: null,
        dropLinkIdHash: null,
        sourcePeer: null,
        createdAt: 0,
        expiresAt: Date.parse('2100-01-01'),
      },
      UNLIMITED,
      0,
    );
    expect(opened.ok).toBe(true);
    const done = await stores.quota.completeUpload(
      {
        uploadId: id,
        contentHash: hash,
        size: SIZE,
        asset: { create: { id, ownerId: accountId, dropExpiresAt: null } },
      },
      UNLIMITED,
      0,
    );
    expect(typeof done === 'string' ? done : done.outcome).toBe('completed');
  }, 300_000);
  afterAll(async () => {
    await close?.();
    await rm(root, { recursive: true, force: true });
  });

  const headers = () => ({ authorization: `Bearer ${token}`, 'x-svc-protocol': VERSION });

  it('a 256 MiB blob streams whole with flat memory', async () => {
    const before = process.memoryUsage();
    let peakBuffers = 0;
    let peakRss = 0;
    const sample = () => {
      const m = process.memoryUsage();
      peakBuffers = Math.max(peakBuffers, m.arrayBuffers);
      peakRss = Math.max(peakRss, m.rss);
    };
    const timer = setInterval(sample, 10);
    const res = await fetch(`${base}/v1/blobs/${hash}`, { headers: headers() });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(SIZE));
    const digest = createHash('sha256');
    let received = 0;
    for await (const chunk of res.body! as unknown as AsyncIterable<Uint8Array>) {
      digest.update(chunk);
      received += chunk.length;
      if ((received & (16 * MiB - 1)) < chunk.length) sample();
    }
    clearInterval(timer);
    expect(received).toBe(SIZE);
    expect(digest.digest('hex')).toBe(hash);
    // Server and client share this process: a blob held whole would add 256 MiB (twice over, with
    // the client's copy). Streaming keeps both to a few chunks in flight.
    expect(peakBuffers - before.arrayBuffers).toBeLessThan(64 * MiB);
    expect(peakRss - before.rss).toBeLessThan(160 * MiB);
  });

  it('HEAD and a 304 open nothing; a range opens one read of just that range', async () => {
    const at = reads.n;
    const head = await fetch(`${base}/v1/blobs/${hash}`, { method: 'HEAD', headers: headers() });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(SIZE));
    const ranged = await fetch(`${base}/v1/blobs/${hash}`, {
      method: 'HEAD',
      headers: { ...headers(), range: 'bytes=100-' },
    });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get('content-length')).toBe(String(SIZE - 100));
    expect(
      (await fetch(`${base}/v1/blobs/${hash}`, { headers: { ...headers(), 'if-none-match': `"${hash}"` } })).status,
    ).toBe(304);
    expect(reads.n).toBe(at);
    const seek = await fetch(`${base}/v1/blobs/${hash}`, {
      headers: { ...headers(), range: `bytes=${200 * MiB}-${200 * MiB + 9}` },
    });
    expect(seek.status).toBe(206);
    expect(new Uint8Array(await seek.arrayBuffer())).toEqual(new Uint8Array(10).fill((200 * 37) & 0xff));
    expect(reads.n).toBe(at + 1);
  });

  it('a client that hangs up mid-download leaves no file open', async () => {
    const openFds = async () => (await readdir('/proc/self/fd')).length;
    const before = await openFds();
    for (let i = 0; i < 5; i++) {
      const abort = new AbortController();
      const res = await fetch(`${base}/v1/blobs/${hash}`, { headers: headers(), signal: abort.signal });
      const reader = res.body!.getReader();
      await reader.read();
      abort.abort();
      await reader.read().catch(() => undefined);
    }
    // The server notices the closed sockets and cancels the streams, which close their files.
    let now = await openFds();
    for (let i = 0; i < 50 && now > before + 1; i++) {
      await new Promise((r) => setTimeout(r, 50));
      now = await openFds();
    }
    expect(now).toBeLessThanOrEqual(before + 1);
  });
});
