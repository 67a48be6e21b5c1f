import { createHash } from 'node:crypto';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Argon2Hasher } from '@strongroom/adapters-node';
import { createSqlitePorts, openSqliteDatabase } from '@strongroom/adapters-sqlite';
import { createPgPorts } from '@strongroom/adapters-pg';
import { openTestDatabase } from '@strongroom/adapters-pg/testing';
import {
  FakeClock,
  MemoryBlobStore,
  MemoryLogger,
  SeededRandom,
  TestDevice,
  TestIdentity,
} from '@strongroom/core/testing';
import { createApp } from '../app.js';
import { readConfig } from '../config.js';
import { buildDeps, type Stores } from '../deps.js';
import { call, listen, registerUser, testSeed, VERSION, type CallOptions } from '@strongroom/tests';

/**
 * Reading blobs back (spec §10.9 to §10.11) over HTTP on SQLite and PostgreSQL:
 * every principal against both routes, then ranges, conditional requests and HEAD. Alice sponsors
 * S and S2 and added Bob as an owner of S; Carol is unrelated.
 */

const PIN = '2026-06-01';
const WRAPPED = Buffer.from('wrapped keys under the link secret').toString('base64url');
const SEAL = Buffer.from('x25519 public key of the link......').toString('base64url');
const phone = new TestDevice('phone');
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const as = (token: string, actAs?: string): CallOptions => ({
  token,
  ...(actAs ? { headers: { 'x-svc-act-as': actAs } } : {}),
});

let seq = 0;
function fresh(size = 300): Uint8Array {
  const b = new Uint8Array(size);
  const tag = createHash('sha256').update(`${process.pid}:${++seq}:${testSeed()}`).digest();
  for (let i = 0; i < size; i++) b[i] = tag[i % tag.length]! ^ (i & 0xff);
  return b;
}

function expectOk<T extends { status: number; body: any }>(r: T, status: number, what: string): T {
  if (r.status !== status) throw new Error(`${what}: expected ${status}, got ${r.status} ${JSON.stringify(r.body)}`);
  return r;
}

interface Backend {
  app: Hono;
  base: string;
  clock: FakeClock;
  close(): Promise<void>;
}

async function served(stores: Stores): Promise<Backend> {
  const clock = new FakeClock();
  const env = {
    SVC_BASE_URL: 'http://127.0.0.1:8080',
    SVC_SECRET_KEY: 'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc',
    SVC_QUOTA_SOFT_BYTES: '',
    SVC_QUOTA_HARD_BYTES: '100000000',
  };
  const deps = await buildDeps(readConfig(env), stores, {
    clock,
    random: new SeededRandom(testSeed()),
    logger: new MemoryLogger(),
    hasher: new Argon2Hasher(),
  });
  const app = createApp(deps);
  const server = await listen(app);
  return {
    app,
    base: server.baseUrl,
    clock,
    close: async () => {
      await server.close();
      await stores.close();
    },
  };
}
async function sqliteBackend(): Promise<Backend> {
  const db = openSqliteDatabase(':memory:');
  return served({ ...createSqlitePorts(db), blobs: new MemoryBlobStore(), close: async () => void db.close() });
}
async function pgBackend(): Promise<Backend> {
  const t = await openTestDatabase();
  return served({ ...createPgPorts(t.db), blobs: new MemoryBlobStore(), close: () => t.close() });
}

/** Builds the world through the API. */
class World {
  constructor(readonly b: Backend) {}

  async account(): Promise<{ token: string; id: string }> {
    const u = await registerUser(this.b.app);
    const id = (await call(this.b.app, 'GET', '/v1/auth/profile', { token: u.access_token })).body.account_id as string;
    const dir = new TestIdentity(id).signDirectory(id, 1, [phone]);
    expectOk(
      await call(this.b.app, 'PUT', '/v1/devices/directory', {
        token: u.access_token,
        raw: raw(dir),
        contentType: 'application/cbor',
      }),
      200,
      'directory',
    );
    return { token: u.access_token, id };
  }

  /** Sends `data` as a finished upload; returns the upload (= asset, for an original) id. */
  async upload(
    o: CallOptions,
    data: Uint8Array,
    extra: Record<string, unknown> = {},
    manifest?: Record<string, unknown>,
  ): Promise<string> {
    const kind = (extra.kind as string | undefined) ?? 'original';
    const r = expectOk(
      await call(this.b.app, 'POST', '/upload', {
        ...o,
        body: { device_id: 'phone', kind, declared_size: data.length, ...extra },
      }),
      201,
      'open upload',
    );
    const id = r.body.upload_id as string;
    expectOk(
      await call(this.b.app, 'PUT', `/upload/${id}`, { ...o, raw: raw(data), contentType: 'application/octet-stream' }),
      200,
      'send',
    );
    expectOk(
      await call(this.b.app, 'POST', `/upload/${id}/finalize`, {
        ...o,
        body: { content_hash: sha(data), ...(manifest ? { manifest } : {}) },
      }),
      200,
      'finalize',
    );
    return id;
  }

  async album(o: CallOptions): Promise<string> {
    return expectOk(
      await call(this.b.app, 'POST', '/v1/albums', { ...o, body: { device_id: 'phone' }, version: PIN }),
      201,
      'album',
    ).body.album_id;
  }

  async link(o: CallOptions, body: Record<string, unknown>): Promise<string> {
    return expectOk(await call(this.b.app, 'POST', '/v1/links', { ...o, body }), 201, 'link').body.link_id;
  }
}

/** A GET (or HEAD) of a blob path, the body read as bytes. */
async function get(
  b: Backend,
  path: string,
  o: {
    token?: string;
    actAs?: string;
    headers?: Record<string, string>;
    method?: string;
    version?: string | null;
  } = {},
) {
  const headers: Record<string, string> = { ...o.headers };
  if (o.version !== null) headers['x-svc-protocol'] = o.version ?? VERSION;
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.actAs) headers['x-svc-act-as'] = o.actAs;
  const res = await fetch(b.base + path, { method: o.method ?? 'GET', headers, redirect: 'manual' });
  const bytes = new Uint8Array(await res.arrayBuffer());
  return {
    status: res.status,
    headers: res.headers,
    bytes,
    json: (): any => JSON.parse(Buffer.from(bytes).toString('utf8')),
  };
}

for (const [name, open] of [
  ['SQLite', sqliteBackend],
  ['PostgreSQL', pgBackend],
] as const) {
  describe(`reading blobs back (${name})`, { timeout: 120_000 }, () => {
    let b: Backend;
    let w: World;
    let alice: { token: string; id: string };
    let bob: { token: string; id: string };
    let carol: { token: string; id: string };
    let s: string;
    let s2: string;
    // Blobs: Alice's asset (original + derivative), her album asset, a trashed one; S's and S2's assets.
    const data = {
      own: fresh(),
      derivative: fresh(),
      inAlbum: fresh(),
      trashed: fresh(),
      ofS: fresh(),
      ofS2: fresh(),
      drop: fresh(),
      unknown: fresh(),
    };
    let ownAsset: string;
    let trashedAsset: string;
    let album: string;
    let assetLink: string;
    let albumLink: string;
    let uploadLink: string;
    let dropToken: string;
    let dropId: string;

    beforeAll(async () => {
      b = await open();
      w = new World(b);
      [alice, bob, carol] = [await w.account(), await w.account(), await w.account()];
      s = expectOk(await call(b.app, 'POST', '/v1/sponsored', { token: alice.token }), 201, 'S').body.account_id;
      s2 = expectOk(await call(b.app, 'POST', '/v1/sponsored', { token: alice.token }), 201, 'S2').body.account_id;
      expectOk(
        await call(b.app, 'POST', `/v1/sponsored/${s}/owners`, { token: alice.token, body: { account_id: bob.id } }),
        200,
        'add Bob',
      );
      const a = as(alice.token);
      ownAsset = await w.upload(a, data.own);
      await w.upload(a, data.derivative, { kind: 'derivative' }, { asset_id: ownAsset });
      album = await w.album(a);
      await w.upload(a, data.inAlbum, { album_id: album });
      trashedAsset = await w.upload(a, data.trashed);
      expectOk(await call(b.app, 'POST', `/v1/assets/${trashedAsset}/trash`, a), 200, 'trash');
      await w.upload(as(bob.token, s), data.ofS);
      await w.upload(as(alice.token, s2), data.ofS2);
      assetLink = await w.link(a, { kind: 'share', asset_ids: [ownAsset, trashedAsset], wrapped_key: WRAPPED });
      albumLink = await w.link(a, { kind: 'share', album_id: album, wrapped_key: WRAPPED });
      uploadLink = await w.link(a, { kind: 'upload', album_id: album, seal_key: SEAL });
      const d = expectOk(
        await call(b.app, 'POST', `/v1/links/${uploadLink}/drops`, { body: { declared_size: data.drop.length } }),
        201,
        'drop',
      );
      [dropId, dropToken] = [d.body.upload_id, d.body.upload_token];
      const guest = { headers: { authorization: `Upload ${dropToken}` } };
      expectOk(
        await call(b.app, 'PUT', `/upload/${dropId}`, {
          ...guest,
          raw: raw(data.drop),
          contentType: 'application/octet-stream',
        }),
        200,
        'guest send',
      );
      expectOk(
        await call(b.app, 'POST', `/upload/${dropId}/finalize`, { ...guest, body: { content_hash: sha(data.drop) } }),
        200,
        'guest finalize',
      );
    }, 120_000);
    afterAll(async () => {
      await b?.close();
    });

    const own = (hash: string) => `/v1/blobs/${hash}`;
    const viaLink = (link: string, hash: string) => `/v1/links/${link}/blobs/${hash}`;

    async function expectBytes(path: string, bytes: Uint8Array, o: Parameters<typeof get>[2] = {}): Promise<void> {
      const r = await get(b, path, o);
      expect(r.status, `${path} ${JSON.stringify({ ...o, token: o.token ? 'set' : undefined })}`).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/octet-stream');
      expect(r.headers.get('etag')).toBe(`"${sha(bytes)}"`);
      expect(r.headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
      expect(r.headers.get('content-length')).toBe(String(bytes.length));
      expect(sha(r.bytes)).toBe(sha(bytes));
    }
    async function expectMissing(path: string, o: Parameters<typeof get>[2] = {}): Promise<void> {
      const r = await get(b, path, o);
      expect(r.status, `${path} ${o.actAs ?? ''}`).toBe(404);
      expect(r.json().code).toBe('error.not_found');
      // Nothing of the blob leaks through the refusal.
      expect(r.headers.get('etag')).toBeNull();
      expect(r.headers.get('content-range')).toBeNull();
    }

    it("the owner reads its blobs in every role, trashed ones too; a hash alone or another account's reads nothing", async () => {
      for (const blob of [data.own, data.derivative, data.inAlbum, data.trashed])
        await expectBytes(own(sha(blob)), blob, { token: alice.token });
      for (const blob of [data.ofS, data.ofS2, data.unknown])
        await expectMissing(own(sha(blob)), { token: alice.token });
      await expectMissing(own(sha(data.own).toUpperCase()), { token: alice.token });
      await expectMissing(own('zz'), { token: alice.token });
      // Carol holds none of them; the same bytes uploaded by Carol then are hers to read.
      for (const blob of [data.own, data.ofS, data.trashed])
        await expectMissing(own(sha(blob)), { token: carol.token });
    });

    it("co-owner acting as S reads S's blobs only; the sponsor needs act-as; a sibling reads nothing of S", async () => {
      await expectBytes(own(sha(data.ofS)), data.ofS, { token: bob.token, actAs: s });
      for (const blob of [data.own, data.ofS2, data.trashed])
        await expectMissing(own(sha(blob)), { token: bob.token, actAs: s });
      // Bob as himself reaches nothing of S.
      await expectMissing(own(sha(data.ofS)), { token: bob.token });
      // Alice, the sponsor: without act-as S's blob is not hers; acting as S2 neither.
      await expectMissing(own(sha(data.ofS)), { token: alice.token });
      await expectMissing(own(sha(data.ofS)), { token: alice.token, actAs: s2 });
      await expectBytes(own(sha(data.ofS)), data.ofS, { token: alice.token, actAs: s });
      await expectBytes(own(sha(data.ofS2)), data.ofS2, { token: alice.token, actAs: s2 });
      // Bob acting as S2 (not an owner of it) is refused before anything is read.
      expect((await get(b, own(sha(data.ofS2)), { token: bob.token, actAs: s2 })).status).toBe(403);
    });

    it('no token, a guest upload token, a share-link id as a token: 401 on the account route', async () => {
      expect((await get(b, own(sha(data.own)))).status).toBe(401);
      expect((await get(b, own(sha(data.drop)), { headers: { authorization: `Upload ${dropToken}` } })).status).toBe(
        401,
      );
      expect((await get(b, own(sha(data.own)), { headers: { authorization: `Bearer ${assetLink}` } })).status).toBe(
        401,
      );
      // And the protocol header is needed.
      expect((await get(b, own(sha(data.own)), { token: alice.token, version: null })).status).toBe(426);
    });

    it("announcing another account's hash never makes it readable: no bytes, no reference, no read", async () => {
      const hash = sha(data.own);
      const c = as(carol.token);
      const opened = expectOk(
        await call(b.app, 'POST', '/upload', {
          ...c,
          body: { device_id: 'phone', kind: 'original', declared_size: data.own.length, content_hash: hash },
        }),
        201,
        'open',
      );
      expect(opened.body.state).not.toBe('Merged');
      // Finalizing without sending the bytes binds nothing.
      const fin = await call(b.app, 'POST', `/upload/${opened.body.upload_id}/finalize`, {
        ...c,
        body: { content_hash: hash },
      });
      expect(fin.status).not.toBe(200);
      await expectMissing(own(hash), { token: carol.token });
      // Nor does sending other bytes under that hash.
      const wrong = fresh(data.own.length);
      expect(
        (
          await call(b.app, 'PUT', `/upload/${opened.body.upload_id}`, {
            ...c,
            raw: raw(wrong),
            contentType: 'application/octet-stream',
          })
        ).status,
      ).toBe(409);
      expect(
        (await call(b.app, 'POST', `/upload/${opened.body.upload_id}/finalize`, { ...c, body: { content_hash: hash } }))
          .status,
      ).not.toBe(200);
      await expectMissing(own(hash), { token: carol.token });
      // A share link of Carol's naming Alice's asset is refused at creation, so it cannot read it either.
      expect(
        (
          await call(b.app, 'POST', '/v1/links', {
            ...c,
            body: { kind: 'share', asset_ids: [ownAsset], wrapped_key: WRAPPED },
          })
        ).status,
      ).toBe(404);
      // Holding the bytes is proof of possession: then Carol has an asset of her own, and reads it.
      const hers = await w.upload(c, data.own);
      expect(hers).not.toBe(ownAsset);
      await expectBytes(own(hash), data.own, { token: carol.token });
      // Which still shows nothing else of Alice's.
      await expectMissing(own(sha(data.derivative)), { token: carol.token });
    });

    it('a pending drop: its owner reads it to decide; the guest who sent it does not; links do not show it', async () => {
      await expectBytes(own(sha(data.drop)), data.drop, { token: alice.token });
      await expectMissing(own(sha(data.drop)), { token: bob.token });
      await expectMissing(viaLink(albumLink, sha(data.drop)));
      await expectMissing(viaLink(uploadLink, sha(data.drop)), { headers: { authorization: `Upload ${dropToken}` } });
    });

    it("a share link reads what it covers: its assets (every role) or its album's live assets; nothing else", async () => {
      await expectBytes(viaLink(assetLink, sha(data.own)), data.own);
      await expectBytes(viaLink(assetLink, sha(data.derivative)), data.derivative);
      await expectBytes(viaLink(albumLink, sha(data.inAlbum)), data.inAlbum);
      await expectMissing(viaLink(assetLink, sha(data.inAlbum)));
      await expectMissing(viaLink(albumLink, sha(data.own)));
      // Trashed: withdrawn from its links (its owner still reads it).
      await expectMissing(viaLink(assetLink, sha(data.trashed)));
      for (const blob of [data.ofS, data.ofS2, data.unknown]) {
        await expectMissing(viaLink(assetLink, sha(blob)));
        await expectMissing(viaLink(albumLink, sha(blob)));
      }
      // An upload link (same album) and unknown links read nothing; a token changes nothing.
      await expectMissing(viaLink(uploadLink, sha(data.inAlbum)));
      await expectMissing(viaLink('A'.repeat(22), sha(data.own)));
      await expectMissing(viaLink('short', sha(data.own)));
      await expectBytes(viaLink(assetLink, sha(data.own)), data.own, { token: carol.token });
      expect((await get(b, viaLink(assetLink, sha(data.own)), { version: null })).status).toBe(426);
    });

    it("revoked and expired links read nothing; a purged asset's blob is gone for its owner at once", async () => {
      const a = as(alice.token);
      const temp = await w.link(a, {
        kind: 'share',
        asset_ids: [ownAsset],
        wrapped_key: WRAPPED,
        expires_at: new Date(b.clock.now() + 60_000).toISOString(),
      });
      const revoked = await w.link(a, { kind: 'share', asset_ids: [ownAsset], wrapped_key: WRAPPED });
      await expectBytes(viaLink(temp, sha(data.own)), data.own);
      await expectBytes(viaLink(revoked, sha(data.own)), data.own);
      expectOk(await call(b.app, 'DELETE', `/v1/links/${revoked}`, a), 204, 'revoke');
      await expectMissing(viaLink(revoked, sha(data.own)));
      b.clock.advance(60_000);
      await expectMissing(viaLink(temp, sha(data.own)));
      await expectBytes(viaLink(assetLink, sha(data.own)), data.own);
      // Purge (before any sweep): the reference is gone, so is the read.
      const gone = fresh();
      const id = await w.upload(a, gone);
      expectOk(await call(b.app, 'POST', `/v1/assets/${id}/trash`, a), 200, 'trash');
      await expectBytes(own(sha(gone)), gone, { token: alice.token });
      expectOk(await call(b.app, 'DELETE', `/v1/assets/${id}`, a), 204, 'purge');
      await expectMissing(own(sha(gone)), { token: alice.token });
    });

    it('ranges: first byte, middle, suffix, open; past the end 416 with the size; several ranges serve the whole blob', async () => {
      const blob = data.own;
      const hash = sha(blob);
      const size = blob.length;
      for (const path of [own(hash), viaLink(assetLink, hash)]) {
        const o = path.startsWith('/v1/blobs') ? { token: alice.token } : {};
        const part = async (range: string, start: number, end: number) => {
          const r = await get(b, path, { ...o, headers: { range } });
          expect(r.status, range).toBe(206);
          expect(r.headers.get('content-range')).toBe(`bytes ${start}-${end}/${size}`);
          expect(r.headers.get('content-length')).toBe(String(end - start + 1));
          expect(r.headers.get('etag')).toBe(`"${hash}"`);
          expect(Buffer.from(r.bytes).equals(Buffer.from(blob.subarray(start, end + 1)))).toBe(true);
        };
        await part('bytes=0-0', 0, 0);
        await part('bytes=10-99', 10, 99);
        await part('bytes=-25', size - 25, size - 1);
        await part(`bytes=${size - 7}-`, size - 7, size - 1);
        await part(`bytes=5-${size * 10}`, 5, size - 1);
        for (const range of [`bytes=${size}-`, `bytes=${size + 5}-${size + 9}`, 'bytes=-0']) {
          const r = await get(b, path, { ...o, headers: { range } });
          expect(r.status, range).toBe(416);
          expect(r.headers.get('content-range')).toBe(`bytes */${size}`);
          expect(r.json().code).toBe('error.request.range_not_satisfiable');
        }
        for (const range of ['bytes=0-1,5-9', 'items=0-1', 'bytes=9-1']) {
          const r = await get(b, path, { ...o, headers: { range } });
          expect(r.status, range).toBe(200);
          expect(r.headers.get('accept-ranges')).toBe('bytes');
          expect(sha(r.bytes)).toBe(hash);
        }
        // If-Range with another tag: the whole blob, not the range.
        const whole = await get(b, path, { ...o, headers: { range: 'bytes=0-0', 'if-range': '"other"' } });
        expect(whole.status).toBe(200);
        expect(whole.bytes.length).toBe(size);
      }
    });

    it("conditional requests and HEAD: 304 for the tag, HEAD states the GET's headers with no body", async () => {
      const blob = data.inAlbum;
      const hash = sha(blob);
      for (const path of [own(hash), viaLink(albumLink, hash)]) {
        const o = path.startsWith('/v1/blobs') ? { token: alice.token } : {};
        const notModified = await get(b, path, { ...o, headers: { 'if-none-match': `"${hash}"` } });
        expect(notModified.status).toBe(304);
        expect(notModified.bytes.length).toBe(0);
        expect(notModified.headers.get('etag')).toBe(`"${hash}"`);
        expect((await get(b, path, { ...o, headers: { 'if-none-match': '*' } })).status).toBe(304);
        expect((await get(b, path, { ...o, headers: { 'if-none-match': `"x", W/"${hash}"` } })).status).toBe(304);
        expect((await get(b, path, { ...o, headers: { 'if-none-match': '"other"' } })).status).toBe(200);
        const head = await get(b, path, { ...o, method: 'HEAD' });
        expect(head.status).toBe(200);
        expect(head.bytes.length).toBe(0);
        expect(head.headers.get('content-length')).toBe(String(blob.length));
        expect(head.headers.get('etag')).toBe(`"${hash}"`);
        const headRange = await get(b, path, { ...o, method: 'HEAD', headers: { range: 'bytes=-10' } });
        expect(headRange.status).toBe(206);
        expect(headRange.headers.get('content-length')).toBe('10');
        expect(headRange.headers.get('content-range')).toBe(
          `bytes ${blob.length - 10}-${blob.length - 1}/${blob.length}`,
        );
      }
      // A refused or unknown blob: the same 404 with or without a matching tag (the tag proves nothing).
      await expectMissing(own(sha(data.ofS)), {
        token: alice.token,
        headers: { 'if-none-match': `"${sha(data.ofS)}"` },
      });
      await expectMissing(viaLink(albumLink, sha(data.own)), { headers: { 'if-none-match': '*' } });
      expect((await get(b, own(sha(data.ofS)), { token: alice.token, method: 'HEAD' })).status).toBe(404);
    });
  });
}
