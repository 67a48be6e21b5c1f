import { createHash } from 'node:crypto';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, type CallOptions, type TestServer } from '@strongroom/tests';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const KEY = Buffer.from('wrapped keys under the link secret').toString('base64url');
const DAY_MS = 86_400_000;

let s: TestServer;
beforeEach(async () => {
  s = await testServer({ SVC_SYNC_TOMBSTONE_DAYS: '2', SVC_UPLOAD_TTL_S: '600' });
});
afterEach(async () => {
  await s.close();
});

const problem = (status: number, code: string) => ({ status, body: expect.objectContaining({ status, code }) });

async function user() {
  const u = await registerUser(s.app);
  const token = u.access_token;
  const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  expect(
    (await call(s.app, 'PUT', '/v1/devices/directory', { token, raw: raw(dir), contentType: 'application/cbor' }))
      .status,
  ).toBe(200);
  return { token, accountId, sessionToken: u.session_token };
}
const as = (token: string, actAs?: string): CallOptions => ({
  token,
  ...(actAs ? { headers: { 'x-svc-act-as': actAs } } : {}),
});
async function album(o: CallOptions): Promise<string> {
  const r = await call(s.app, 'POST', '/v1/albums', { ...o, body: { device_id: 'phone' } });
  expect(r.status).toBe(201);
  return r.body.album_id;
}
let seed = 0;
async function asset(o: CallOptions, albumId: string | null): Promise<string> {
  const data = new Uint8Array(16).fill(++seed);
  const u = await call(s.app, 'POST', '/upload', {
    ...o,
    body: {
      device_id: 'phone',
      kind: 'original',
      declared_size: data.length,
      ...(albumId ? { album_id: albumId } : {}),
    },
  });
  expect(u.status).toBe(201);
  expect(
    (
      await call(s.app, 'PUT', `/upload/${u.body.upload_id}`, {
        ...o,
        raw: raw(data),
        contentType: 'application/octet-stream',
      })
    ).status,
  ).toBe(200);
  expect(
    (await call(s.app, 'POST', `/upload/${u.body.upload_id}/finalize`, { ...o, body: { content_hash: sha(data) } }))
      .status,
  ).toBe(200);
  return u.body.upload_id;
}

type Change = { kind: string; id: string; op: string; record: Record<string, unknown> | null };
/** A client's replica: what replaying its pages built, by kind:id. */
class Replica {
  cursor: string | null = null;
  readonly held = new Map<string, Record<string, unknown>>();
  constructor(readonly o: CallOptions) {}
  /** One page; answers it. */
  async page(limit?: number): Promise<{ changes: Change[]; has_more: boolean }> {
    const q = new URLSearchParams();
    if (this.cursor !== null) q.set('cursor', this.cursor);
    if (limit !== undefined) q.set('limit', String(limit));
    const r = await call(s.app, 'GET', `/v1/sync?${q}`, this.o);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    for (const c of r.body.changes as Change[]) {
      if (c.op === 'remove') {
        expect(c.record).toBeNull();
        this.held.delete(`${c.kind}:${c.id}`);
      } else this.held.set(`${c.kind}:${c.id}`, c.record!);
    }
    this.cursor = r.body.cursor;
    return r.body;
  }
  async toEnd(limit?: number): Promise<Change[]> {
    const all: Change[] = [];
    for (;;) {
      const p = await this.page(limit);
      all.push(...p.changes);
      if (!p.has_more) return all;
    }
  }
  keys(): string[] {
    return [...this.held.keys()].sort();
  }
}

describe('GET /v1/sync', () => {
  it('a second device lists the whole library in pages, then gets each change since its cursor, each record as GET answers it', async () => {
    const a = await user();
    const albumId = await album(as(a.token));
    const x = await asset(as(a.token), albumId);
    const y = await asset(as(a.token), albumId);
    const z = await asset(as(a.token), null);
    const link = (
      await call(s.app, 'POST', '/v1/links', {
        token: a.token,
        body: { kind: 'share', album_id: albumId, wrapped_key: KEY },
      })
    ).body.link_id as string;

    const device = new Replica(as(a.token));
    await device.toEnd(2);
    expect(device.keys()).toEqual(
      [`album:${albumId}`, `asset:${x}`, `asset:${y}`, `asset:${z}`, `link:${link}`].sort(),
    );
    expect(device.held.get(`album:${albumId}`)).toEqual(
      (await call(s.app, 'GET', `/v1/albums/${albumId}`, as(a.token))).body,
    );
    expect(device.held.get(`album:${albumId}`)).toMatchObject({ album_id: albumId, asset_count: 2 });
    for (const id of [x, y, z])
      expect(device.held.get(`asset:${id}`)).toEqual((await call(s.app, 'GET', `/v1/assets/${id}`, as(a.token))).body);
    expect(device.held.get(`asset:${x}`)).toMatchObject({
      album_id: albumId,
      state: 'live',
      blobs: [{ role: 'original', size: 16 }],
    });
    expect(device.held.get(`asset:${z}`)).toMatchObject({ album_id: null });
    expect(device.held.get(`link:${link}`)).toMatchObject({ link_id: link, kind: 'share', status: 'active' });
    // Nothing new: an empty page, the same position.
    expect(await device.page()).toMatchObject({ changes: [], has_more: false });

    expect((await call(s.app, 'POST', `/v1/assets/${x}/trash`, as(a.token))).status).toBe(200);
    expect((await call(s.app, 'DELETE', `/v1/assets/${x}`, as(a.token))).status).toBe(204);
    expect((await call(s.app, 'POST', `/v1/assets/${y}/trash`, as(a.token))).status).toBe(200);
    expect((await call(s.app, 'DELETE', `/v1/links/${link}`, as(a.token))).status).toBe(204);
    const since = await device.toEnd();
    // Each object once, in the order the writes committed; removals carry no record.
    expect(since.map((c) => `${c.kind}:${c.op}:${c.id}`)).toEqual([
      `asset:remove:${x}`,
      `asset:upsert:${y}`,
      `album:upsert:${albumId}`,
      `link:remove:${link}`,
    ]);
    expect(device.held.get(`asset:${y}`)).toMatchObject({ state: 'trashed' });
    expect(device.held.get(`album:${albumId}`)).toMatchObject({ asset_count: 0 });
    // A fresh device lists only what lives.
    const fresh = new Replica(as(a.token));
    await fresh.toEnd(1);
    expect(fresh.keys()).toEqual(device.keys());
    expect(fresh.keys()).toEqual([`album:${albumId}`, `asset:${y}`, `asset:${z}`].sort());
  });

  it("acts as a sponsored account with X-Svc-Act-As: its library, not its owner's", async () => {
    const owner = await user();
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: owner.token })).body.account_id as string;
    const mine = await asset(as(owner.token), null);
    const theirs = await asset(as(owner.token, kid), null);
    const kidDevice = new Replica(as(owner.token, kid));
    await kidDevice.toEnd();
    expect(kidDevice.keys()).toEqual([`asset:${theirs}`]);
    const ownerDevice = new Replica(as(owner.token));
    await ownerDevice.toEnd();
    expect(ownerDevice.keys()).toEqual([`asset:${mine}`]);
    // The kid's cursor is the kid's: the owner's own sync refuses it.
    expect(
      await call(s.app, 'GET', `/v1/sync?cursor=${encodeURIComponent(kidDevice.cursor!)}`, as(owner.token)),
    ).toMatchObject(problem(400, 'error.request.invalid'));
  });

  it("refuses another account's cursor, a forged one and a limit outside 1..1000 (400), and a cursor past the tombstone horizon (410)", async () => {
    const [a, b] = [await user(), await user()];
    await asset(as(a.token), null);
    const device = new Replica(as(a.token));
    await device.toEnd();
    const cursor = encodeURIComponent(device.cursor!);
    expect(await call(s.app, 'GET', `/v1/sync?cursor=${cursor}`, as(b.token))).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    const forged = device.cursor!.slice(0, -2) + (device.cursor!.endsWith('AA') ? 'BB' : 'AA');
    expect(await call(s.app, 'GET', `/v1/sync?cursor=${encodeURIComponent(forged)}`, as(a.token))).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    for (const limit of ['0', '1001', '-1', 'x', '1.5'])
      expect(await call(s.app, 'GET', `/v1/sync?limit=${limit}`, as(a.token))).toMatchObject(
        problem(400, 'error.request.invalid'),
      );
    expect((await call(s.app, 'GET', '/v1/sync?limit=1000', as(a.token))).status).toBe(200);
    expect(await call(s.app, 'GET', '/v1/sync')).toMatchObject({ status: 401 });

    s.clock.advance(2 * DAY_MS - 1);
    const token = (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: a.sessionToken } })).body
      .access_token as string;
    expect((await call(s.app, 'GET', `/v1/sync?cursor=${cursor}`, as(token))).status).toBe(200);
    s.clock.advance(2);
    expect(await call(s.app, 'GET', `/v1/sync?cursor=${cursor}`, as(token))).toMatchObject(
      problem(410, 'error.sync.cursor_expired'),
    );
    // The client starts again without a cursor.
    const again = new Replica(as(token));
    await again.toEnd();
    expect(again.keys()).toEqual(device.keys());
  });

  it('concurrent writers while a client pages: once it reads to the end, it holds exactly what GET answers', async () => {
    const a = await user();
    const albumId = await album(as(a.token));
    const seeded = await Promise.all([1, 2, 3, 4].map(() => asset(as(a.token), albumId)));
    const device = new Replica(as(a.token));
    const writers = (async () => {
      const made = await Promise.all([1, 2, 3, 4, 5, 6].map(() => asset(as(a.token), albumId)));
      await Promise.all(
        [seeded[0]!, made[0]!, made[1]!].map((id) => call(s.app, 'POST', `/v1/assets/${id}/trash`, as(a.token))),
      );
      await Promise.all([made[0]!, seeded[0]!].map((id) => call(s.app, 'DELETE', `/v1/assets/${id}`, as(a.token))));
      await call(s.app, 'POST', `/v1/assets/${made[1]!}/restore`, as(a.token));
    })();
    const reader = (async () => {
      for (let i = 0; i < 12; i++) await device.page(1);
    })();
    await Promise.all([writers, reader]);
    await device.toEnd(3);
    const albumNow = (await call(s.app, 'GET', `/v1/albums/${albumId}`, as(a.token))).body;
    expect(albumNow.asset_count).toBe(8);
    expect(device.held.get(`album:${albumId}`)).toEqual(albumNow);
    const assets = [...device.held.keys()].filter((k) => k.startsWith('asset:'));
    expect(assets.length).toBe(8);
    for (const k of assets)
      expect(device.held.get(k)).toEqual((await call(s.app, 'GET', `/v1/assets/${k.slice(6)}`, as(a.token))).body);
  });
});

describe('GET /v1/albums', () => {
  it("lists the caller's albums with their counts; another account's album is not found", async () => {
    const [a, b] = [await user(), await user()];
    const first = await album(as(a.token));
    s.clock.advance(1);
    const second = await album(as(a.token));
    await asset(as(a.token), first);
    const listed = await call(s.app, 'GET', '/v1/albums', as(a.token));
    expect(
      listed.body.albums.map((x: { album_id: string; asset_count: number }) => [x.album_id, x.asset_count]),
    ).toEqual([
      [first, 1],
      [second, 0],
    ]);
    expect(listed.body.albums[0]).toMatchObject({
      protocol_version: expect.any(String),
      created_at: expect.any(String),
    });
    expect((await call(s.app, 'GET', '/v1/albums', as(b.token))).body).toEqual({ albums: [] });
    expect(await call(s.app, 'GET', `/v1/albums/${first}`, as(b.token))).toMatchObject(problem(404, 'error.not_found'));
  });
});

describe('GET /v1/links/{id}/assets', () => {
  it('lists the live assets a share link covers, blobs included, in pages; trashed ones drop out; a revoked link is not found', async () => {
    const a = await user();
    const albumId = await album(as(a.token));
    const inAlbum = [
      await asset(as(a.token), albumId),
      await asset(as(a.token), albumId),
      await asset(as(a.token), albumId),
    ].sort();
    const outside = await asset(as(a.token), null);
    const link = (
      await call(s.app, 'POST', '/v1/links', {
        token: a.token,
        body: { kind: 'share', album_id: albumId, wrapped_key: KEY },
      })
    ).body.link_id as string;
    const named = (
      await call(s.app, 'POST', '/v1/links', {
        token: a.token,
        body: { kind: 'share', asset_ids: [outside], wrapped_key: KEY },
      })
    ).body.link_id as string;
    const list = async (id: string, limit: number) => {
      const out: string[] = [];
      let cursor: string | null = null;
      for (;;) {
        const r = await call(
          s.app,
          'GET',
          `/v1/links/${id}/assets?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        for (const c of r.body.changes) {
          expect(c).toMatchObject({
            kind: 'asset',
            op: 'upsert',
            record: { asset_id: c.id, state: 'live', blobs: [{ role: 'original', content_hash: expect.any(String) }] },
          });
          out.push(c.id);
        }
        if (!r.body.has_more) return { ids: out, cursor: r.body.cursor as string };
        cursor = r.body.cursor;
      }
    };
    expect((await list(link, 2)).ids).toEqual(inAlbum);
    expect((await list(named, 2)).ids).toEqual([outside]);
    expect((await call(s.app, 'POST', `/v1/assets/${inAlbum[1]}/trash`, as(a.token))).status).toBe(200);
    const after = await list(link, 1000);
    expect(after.ids).toEqual([inAlbum[0], inAlbum[2]]);
    // A cursor of one link's listing is not another's.
    expect(
      await call(s.app, 'GET', `/v1/links/${named}/assets?cursor=${encodeURIComponent(after.cursor)}`),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect((await call(s.app, 'DELETE', `/v1/links/${link}`, as(a.token))).status).toBe(204);
    expect(await call(s.app, 'GET', `/v1/links/${link}/assets`)).toMatchObject(problem(404, 'error.not_found'));
    expect(await call(s.app, 'GET', '/v1/links/AAAAAAAAAAAAAAAAAAAAAA/assets')).toMatchObject(
      problem(404, 'error.not_found'),
    );
    const upload = await call(s.app, 'POST', '/v1/links', {
      token: a.token,
      body: { kind: 'upload', album_id: albumId, seal_key: KEY },
    });
    if (upload.status === 201)
      expect(await call(s.app, 'GET', `/v1/links/${upload.body.link_id}/assets`)).toMatchObject(
        problem(404, 'error.not_found'),
      );
  });
});
