import { createHash } from 'node:crypto';
import { uuidv7 } from '@strongroom/core';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, type TestServer } from '@strongroom/tests';

// Quiescence, in_flight and the album pin, end to end through POST /upload (not just the guard).

let s: TestServer;
beforeEach(async () => {
  s = await testServer({ SVC_QUOTA_HARD_BYTES: '', SVC_QUOTA_SOFT_BYTES: '' });
});
afterEach(async () => {
  await s.close();
});

const PIN = '2026-06-01';
const admin = new TestDevice('admin');
let n = 0;

async function albumOwner() {
  const u = await registerUser(s.app);
  const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).body.account_id as string;
  const dir = new TestIdentity(u.address).signDirectory(accountId, 1, [admin]);
  expect(
    (
      await call(s.app, 'PUT', '/v1/devices/directory', {
        token: u.access_token,
        raw: dir.slice(),
        contentType: 'application/cbor',
      })
    ).status,
  ).toBe(200);
  const album = await call(s.app, 'POST', '/v1/albums', {
    token: u.access_token,
    body: { device_id: 'admin' },
    version: PIN,
  });
  return { token: u.access_token, albumId: album.body.album_id as string };
}

const upload = (token: string, body: Record<string, unknown>, version = PIN) =>
  call(s.app, 'POST', '/upload', {
    token,
    version,
    body: { declared_size: 4, kind: 'original', device_id: 'admin', ...body },
  });
const status = (token: string, albumId: string) =>
  call(s.app, 'GET', `/v1/albums/${albumId}/upgrade`, { token, version: PIN });

async function quiesce(token: string, albumId: string): Promise<string> {
  const intentId = uuidv7(s.clock.now() + ++n, new Uint8Array(10).fill(n));
  const signed = admin.signUpgradeIntent({
    album_id: albumId,
    from_version: PIN,
    to_version: '2026-09-01',
    intent_id: intentId,
  });
  const r = await call(s.app, 'POST', `/v1/albums/${albumId}/upgrade`, {
    token,
    raw: signed.slice(),
    contentType: 'application/cbor',
    version: PIN,
  });
  expect(r.status).toBe(202);
  return intentId;
}

describe('uploads into an album under upgrade', () => {
  it('a write not naming the live intent is 409 album_quiescing and writes nothing; naming it passes and counts in flight', async () => {
    const o = await albumOwner();
    const live = await quiesce(o.token, o.albumId);
    expect((await status(o.token, o.albumId)).body).toMatchObject({ phase: 'frozen', in_flight: 0 });

    const refused = await upload(o.token, { album_id: o.albumId });
    expect(refused).toMatchObject({
      status: 409,
      body: { code: 'error.upload.album_quiescing', live_intent_id: live },
    });
    const otherIntent = await upload(o.token, {
      album_id: o.albumId,
      intent_id: uuidv7(s.clock.now(), new Uint8Array(10)),
    });
    expect(otherIntent).toMatchObject({
      status: 409,
      body: { code: 'error.upload.album_quiescing', live_intent_id: live },
    });
    expect((await call(s.app, 'GET', '/quota', { token: o.token })).body.reserved).toBe(0);

    const admitted = await upload(o.token, { album_id: o.albumId, intent_id: live });
    expect(admitted).toMatchObject({ status: 201, body: { state: 'Pending' } });
    // Pending counts as in flight, and frozen reads as quiescing again while anything is.
    expect((await status(o.token, o.albumId)).body).toMatchObject({
      phase: 'quiescing',
      in_flight: 1,
      intent_id: live,
    });

    expect(
      (await call(s.app, 'DELETE', `/upload/${admitted.body.upload_id}`, { token: o.token, version: PIN })).status,
    ).toBeLessThan(300);
    expect((await status(o.token, o.albumId)).body).toMatchObject({ phase: 'frozen', in_flight: 0 });
  });

  it('after an abort the album takes ordinary writes again', async () => {
    const o = await albumOwner();
    const live = await quiesce(o.token, o.albumId);
    expect(
      (
        await call(s.app, 'DELETE', `/v1/albums/${o.albumId}/upgrade?intent_id=${live}`, {
          token: o.token,
          version: PIN,
        })
      ).status,
    ).toBe(204);
    expect((await upload(o.token, { album_id: o.albumId })).status).toBe(201);
  });

  it('counts every non-terminal session against the album and ignores other albums', async () => {
    const o = await albumOwner();
    const other = await call(s.app, 'POST', '/v1/albums', {
      token: o.token,
      body: { device_id: 'admin' },
      version: PIN,
    });
    const a = await upload(o.token, { album_id: o.albumId });
    await upload(o.token, { album_id: o.albumId });
    await upload(o.token, { album_id: other.body.album_id });
    const bytes = new TextEncoder().encode('abcd');
    expect(
      (
        await call(s.app, 'PUT', `/upload/${a.body.upload_id}`, {
          token: o.token,
          version: PIN,
          raw: bytes,
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBeLessThan(300);
    const live = await quiesce(o.token, o.albumId);
    expect((await status(o.token, o.albumId)).body).toMatchObject({
      phase: 'quiescing',
      in_flight: 2,
      intent_id: live,
    });
  });

  it('a finalize whose manifest names another intent is a generic 409', async () => {
    const o = await albumOwner();
    const live = await quiesce(o.token, o.albumId);
    const up = await upload(o.token, { album_id: o.albumId, intent_id: live });
    const bytes = new TextEncoder().encode('wxyz');
    await call(s.app, 'PUT', `/upload/${up.body.upload_id}`, {
      token: o.token,
      version: PIN,
      raw: bytes,
      contentType: 'application/octet-stream',
    });
    const hash = createHash('sha256').update(bytes).digest('hex');
    const wrong = await call(s.app, 'POST', `/upload/${up.body.upload_id}/finalize`, {
      token: o.token,
      version: PIN,
      body: { content_hash: hash, manifest: { intent_id: uuidv7(s.clock.now(), new Uint8Array(10).fill(9)) } },
    });
    expect(wrong).toMatchObject({ status: 409, body: { code: 'error.conflict' } });
    const right = await call(s.app, 'POST', `/upload/${up.body.upload_id}/finalize`, {
      token: o.token,
      version: PIN,
      body: { content_hash: hash, manifest: { intent_id: live } },
    });
    expect(right.status).toBe(200);
  });

  it('a write below the album pin is 426 below_album_pin with the pin; reads are never refused', async () => {
    const o = await albumOwner();
    const old = await upload(o.token, { album_id: o.albumId }, '2026-05-01');
    expect(old).toMatchObject({ status: 426, body: { code: 'error.protocol.below_album_pin', album_pin: PIN } });
    expect(
      (await call(s.app, 'GET', `/v1/albums/${o.albumId}/upgrade`, { token: o.token, version: '2026-03-01' })).status,
    ).toBe(200);
  });

  const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
  const send = async (token: string, id: string, data: Uint8Array, version = PIN) =>
    expect(
      (
        await call(s.app, 'PUT', `/upload/${id}`, {
          token,
          version,
          raw: data as unknown as BodyInit,
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBeLessThan(300);
  const finalize = (token: string, id: string, body: Record<string, unknown>, version = PIN) =>
    call(s.app, 'POST', `/upload/${id}/finalize`, { token, version, body });

  /** An asset of the album: an original uploaded into it and finalized. */
  async function albumAsset(o: { token: string; albumId: string }): Promise<string> {
    const data = new TextEncoder().encode('orig');
    const up = await upload(o.token, { album_id: o.albumId });
    await send(o.token, up.body.upload_id, data);
    expect((await finalize(o.token, up.body.upload_id, { content_hash: sha(data) })).status).toBe(200);
    return up.body.upload_id as string;
  }

  it('a blob attached to an asset of the album is a write to that album, whether or not its upload named the album', async () => {
    const o = await albumOwner();
    const assetId = await albumAsset(o);
    const live = await quiesce(o.token, o.albumId);
    // Opened without album_id: its creation cannot know the asset, so the finalize checks the album.
    const data = new TextEncoder().encode('deri');
    const d = await upload(o.token, { kind: 'derivative' });
    expect(d.status).toBe(201);
    await send(o.token, d.body.upload_id, data);
    expect(
      await finalize(o.token, d.body.upload_id, { content_hash: sha(data), manifest: { asset_id: assetId } }),
    ).toMatchObject({
      status: 409,
      body: { code: 'error.upload.album_quiescing', live_intent_id: live },
    });
    expect((await status(o.token, o.albumId)).body).toMatchObject({ phase: 'frozen', in_flight: 0 });
    // Naming the live intent passes the filter, as any write does.
    expect(
      await finalize(o.token, d.body.upload_id, {
        content_hash: sha(data),
        manifest: { asset_id: assetId, intent_id: live },
      }),
    ).toMatchObject({
      status: 200,
      body: { state: 'Completed' },
    });

    // Below the album's pin: refused at finalize, as at creation when the album is named.
    expect(
      (
        await call(s.app, 'DELETE', `/v1/albums/${o.albumId}/upgrade?intent_id=${live}`, {
          token: o.token,
          version: PIN,
        })
      ).status,
    ).toBe(204);
    const meta = new TextEncoder().encode('meta');
    const m = await upload(o.token, { kind: 'metadata' }, '2026-05-01');
    expect(m.status).toBe(201);
    await send(o.token, m.body.upload_id, meta, '2026-05-01');
    expect(
      await finalize(
        o.token,
        m.body.upload_id,
        { content_hash: sha(meta), manifest: { asset_id: assetId } },
        '2026-05-01',
      ),
    ).toMatchObject({
      status: 426,
      body: { code: 'error.protocol.below_album_pin', album_pin: PIN },
    });
    expect(
      (await finalize(o.token, m.body.upload_id, { content_hash: sha(meta), manifest: { asset_id: assetId } })).status,
    ).toBe(200);

    // Opened naming another album of the account: it does not land in this one.
    const other = await call(s.app, 'POST', '/v1/albums', {
      token: o.token,
      body: { device_id: 'admin' },
      version: PIN,
    });
    const prov = new TextEncoder().encode('prov');
    const p = await upload(o.token, { kind: 'provenance', album_id: other.body.album_id });
    await send(o.token, p.body.upload_id, prov);
    expect(
      await finalize(o.token, p.body.upload_id, { content_hash: sha(prov), manifest: { asset_id: assetId } }),
    ).toMatchObject({ status: 409, body: { code: 'error.conflict' } });
  });

  it('an upload opened in the album at its pin is checked against the pin again where its bytes arrive and where it lands', async () => {
    const o = await albumOwner();
    const data = new TextEncoder().encode('late');
    const up = await upload(o.token, { album_id: o.albumId });
    expect(up.status).toBe(201);
    const put = (version: string) =>
      call(s.app, 'PUT', `/upload/${up.body.upload_id}`, {
        token: o.token,
        version,
        raw: data as unknown as BodyInit,
        contentType: 'application/octet-stream',
      });
    expect(await put('2026-05-01')).toMatchObject({
      status: 426,
      body: { code: 'error.protocol.below_album_pin', album_pin: PIN },
    });
    expect(
      (await call(s.app, 'GET', `/upload/${up.body.upload_id}`, { token: o.token, version: PIN })).body,
    ).toMatchObject({ state: 'Pending' });
    expect((await put(PIN)).status).toBe(200);
    expect(await finalize(o.token, up.body.upload_id, { content_hash: sha(data) }, '2026-05-01')).toMatchObject({
      status: 426,
      body: { code: 'error.protocol.below_album_pin', album_pin: PIN },
    });
    expect((await call(s.app, 'GET', `/v1/assets/${up.body.upload_id}`, { token: o.token, version: PIN })).status).toBe(
      404,
    );
    expect(await finalize(o.token, up.body.upload_id, { content_hash: sha(data) })).toMatchObject({
      status: 200,
      body: { state: 'Completed' },
    });
  });

  it('an upload in flight when the album starts quiescing still reaches its terminal state without naming the intent', async () => {
    const o = await albumOwner();
    const data = new TextEncoder().encode('infl');
    const up = await upload(o.token, { album_id: o.albumId });
    await quiesce(o.token, o.albumId);
    await send(o.token, up.body.upload_id, data);
    expect(await finalize(o.token, up.body.upload_id, { content_hash: sha(data) })).toMatchObject({
      status: 200,
      body: { state: 'Completed' },
    });
  });

  it('a guest drop through a link on the album is checked against the pin where its bytes arrive and where it lands', async () => {
    const o = await albumOwner();
    const seal = Buffer.from('x25519 public key of the link......').toString('base64url');
    const link = await call(s.app, 'POST', '/v1/links', {
      token: o.token,
      version: PIN,
      body: { kind: 'upload', album_id: o.albumId, seal_key: seal },
    });
    const data = new TextEncoder().encode('drop');
    const d = await call(s.app, 'POST', `/v1/links/${link.body.link_id}/drops`, {
      version: PIN,
      body: { declared_size: 4 },
    });
    expect(d.status).toBe(201);
    const guest = { headers: { authorization: `Upload ${d.body.upload_token}` } };
    const put = (version: string) =>
      call(s.app, 'PUT', `/upload/${d.body.upload_id}`, {
        ...guest,
        version,
        raw: data as unknown as BodyInit,
        contentType: 'application/octet-stream',
      });
    const fin = (version: string) =>
      call(s.app, 'POST', `/upload/${d.body.upload_id}/finalize`, {
        ...guest,
        version,
        body: { content_hash: sha(data) },
      });
    expect(await put('2026-05-01')).toMatchObject({
      status: 426,
      body: { code: 'error.protocol.below_album_pin', album_pin: PIN },
    });
    expect((await put(PIN)).status).toBe(200);
    expect(await fin('2026-05-01')).toMatchObject({
      status: 426,
      body: { code: 'error.protocol.below_album_pin', album_pin: PIN },
    });
    expect((await fin(PIN)).status).toBe(200);
  });

  it('asset writes (metadata, trash, restore, purge) on an asset of the album pass its pin and its quiescence (?intent_id= names the live intent)', async () => {
    const o = await albumOwner();
    const assetId = await albumAsset(o);
    const old = '2026-05-01';
    const metadata = (version: string, intent?: string) =>
      call(s.app, 'PUT', `/v1/assets/${assetId}/metadata${intent ? `?intent_id=${intent}` : ''}`, {
        token: o.token,
        version,
        raw: new TextEncoder().encode(`caption ${version} ${intent ?? ''}`) as unknown as BodyInit,
        contentType: 'application/octet-stream',
      });
    const step = (method: string, path: string, version: string, intent?: string) =>
      call(s.app, method, `/v1/assets/${assetId}${path}${intent ? `?intent_id=${intent}` : ''}`, {
        token: o.token,
        version,
      });
    const pinRefusal = { status: 426, body: { code: 'error.protocol.below_album_pin', album_pin: PIN } };
    const asset = async () =>
      (await call(s.app, 'GET', `/v1/assets/${assetId}`, { token: o.token, version: old })).body;

    const before = await asset();
    expect(await metadata(old)).toMatchObject(pinRefusal);
    expect(await step('POST', '/trash', old)).toMatchObject(pinRefusal);
    expect(await asset()).toEqual(before);
    expect((await metadata(PIN)).status).toBe(200);
    expect((await step('POST', '/trash', PIN)).status).toBe(200);
    expect(await step('POST', '/restore', old)).toMatchObject(pinRefusal);
    expect(await step('DELETE', '', old)).toMatchObject(pinRefusal);
    expect((await asset()).state).toBe('trashed');
    expect((await step('POST', '/restore', PIN)).status).toBe(200);

    const live = await quiesce(o.token, o.albumId);
    const quiescing = { status: 409, body: { code: 'error.upload.album_quiescing', live_intent_id: live } };
    const settled = await asset();
    expect(await metadata(PIN)).toMatchObject(quiescing);
    expect(await metadata(PIN, uuidv7(s.clock.now(), new Uint8Array(10).fill(5)))).toMatchObject(quiescing);
    expect(await step('POST', '/trash', PIN)).toMatchObject(quiescing);
    expect(await asset()).toEqual(settled);
    expect((await metadata(PIN, live)).status).toBe(200);
    expect((await step('POST', '/trash', PIN, live)).status).toBe(200);
    expect(await step('POST', '/restore', PIN)).toMatchObject(quiescing);
    expect(await step('DELETE', '', PIN)).toMatchObject(quiescing);
    expect((await step('POST', '/restore', PIN, live)).status).toBe(200);
    expect((await step('POST', '/trash', PIN, live)).status).toBe(200);
    expect((await step('DELETE', '', PIN, live)).status).toBe(204);
  });

  it('emptying the trash purges assets of albums: refused whole like their purge (pin, quiescence), nothing purged; ?intent_id= names the live intent', async () => {
    const o = await albumOwner();
    const inAlbum = await albumAsset(o);
    const data = new TextEncoder().encode('free');
    const free = await upload(o.token, {});
    await send(o.token, free.body.upload_id, data);
    expect((await finalize(o.token, free.body.upload_id, { content_hash: sha(data) })).status).toBe(200);
    for (const id of [inAlbum, free.body.upload_id])
      expect((await call(s.app, 'POST', `/v1/assets/${id}/trash`, { token: o.token, version: PIN })).status).toBe(200);
    const empty = (version: string, intent?: string) =>
      call(s.app, 'POST', `/v1/trash/empty${intent ? `?intent_id=${intent}` : ''}`, { token: o.token, version });
    const states = async () =>
      Promise.all(
        [inAlbum, free.body.upload_id].map(
          async (id) => (await call(s.app, 'GET', `/v1/assets/${id}`, { token: o.token, version: PIN })).body.state,
        ),
      );

    // Below the album's pin: the purge of the album's asset is 426, so the whole request is.
    expect(await empty('2026-05-01')).toMatchObject({
      status: 426,
      body: { code: 'error.protocol.below_album_pin', album_pin: PIN, album_id: o.albumId },
    });
    expect(
      await call(s.app, 'DELETE', `/v1/assets/${inAlbum}`, { token: o.token, version: '2026-05-01' }),
    ).toMatchObject({ status: 426, body: { code: 'error.protocol.below_album_pin' } });
    expect(await states()).toEqual(['trashed', 'trashed']);

    // Quiescing: 409 with the live intent, nothing purged; naming it empties the trash.
    const live = await quiesce(o.token, o.albumId);
    expect(await empty(PIN)).toMatchObject({
      status: 409,
      body: { code: 'error.upload.album_quiescing', live_intent_id: live, album_id: o.albumId },
    });
    expect(await empty(PIN, uuidv7(s.clock.now(), new Uint8Array(10).fill(7)))).toMatchObject({
      status: 409,
      body: { code: 'error.upload.album_quiescing' },
    });
    expect(await states()).toEqual(['trashed', 'trashed']);
    expect(await empty(PIN, live)).toMatchObject({ status: 200, body: { purged: 2 } });
    expect((await call(s.app, 'GET', `/v1/assets/${inAlbum}`, { token: o.token, version: PIN })).status).toBe(404);
  });

  it('asset writes on an asset in no album are not held by any album', async () => {
    const o = await albumOwner();
    const data = new TextEncoder().encode('free');
    const up = await upload(o.token, {}, '2026-05-01');
    await send(o.token, up.body.upload_id, data, '2026-05-01');
    expect((await finalize(o.token, up.body.upload_id, { content_hash: sha(data) }, '2026-05-01')).status).toBe(200);
    await quiesce(o.token, o.albumId);
    const raw = new TextEncoder().encode('caption') as unknown as BodyInit;
    expect(
      (
        await call(s.app, 'PUT', `/v1/assets/${up.body.upload_id}/metadata`, {
          token: o.token,
          version: '2026-05-01',
          raw,
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBe(200);
    expect(
      (await call(s.app, 'POST', `/v1/assets/${up.body.upload_id}/trash`, { token: o.token, version: '2026-05-01' }))
        .status,
    ).toBe(200);
  });

  it("adopting a drop lands it in its link's album: below the pin 426, while quiescing 409 unless it names the live intent", async () => {
    const o = await albumOwner();
    const seal = Buffer.from('x25519 public key of the link......').toString('base64url');
    const link = await call(s.app, 'POST', '/v1/links', {
      token: o.token,
      version: PIN,
      body: { kind: 'upload', album_id: o.albumId, seal_key: seal },
    });
    expect(link.status).toBe(201);
    const data = new TextEncoder().encode('drop');
    const d = await call(s.app, 'POST', `/v1/links/${link.body.link_id}/drops`, {
      version: PIN,
      body: { declared_size: 4 },
    });
    expect(d.status).toBe(201);
    const guest = { headers: { authorization: `Upload ${d.body.upload_token}` } };
    expect(
      (
        await call(s.app, 'PUT', `/upload/${d.body.upload_id}`, {
          ...guest,
          version: PIN,
          raw: data as unknown as BodyInit,
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBeLessThan(300);
    expect(
      (
        await call(s.app, 'POST', `/upload/${d.body.upload_id}/finalize`, {
          ...guest,
          version: PIN,
          body: { content_hash: sha(data) },
        })
      ).status,
    ).toBe(200);
    const adopt = (version: string, intent?: string) =>
      call(s.app, 'POST', `/v1/drops/${d.body.upload_id}/adopt${intent ? `?intent_id=${intent}` : ''}`, {
        token: o.token,
        version,
      });

    expect(await adopt('2026-05-01')).toMatchObject({
      status: 426,
      body: { code: 'error.protocol.below_album_pin', album_pin: PIN },
    });
    const live = await quiesce(o.token, o.albumId);
    expect(await adopt(PIN)).toMatchObject({
      status: 409,
      body: { code: 'error.upload.album_quiescing', live_intent_id: live },
    });
    expect(await adopt(PIN, uuidv7(s.clock.now(), new Uint8Array(10).fill(7)))).toMatchObject({
      status: 409,
      body: { code: 'error.upload.album_quiescing' },
    });
    // Nothing changed: the drop is still waiting.
    expect(
      (await call(s.app, 'GET', `/v1/links/${link.body.link_id}/drops`, { token: o.token, version: PIN })).body
        .drops[0],
    ).toMatchObject({ state: 'ready' });
    expect(await adopt(PIN, live)).toMatchObject({ status: 200, body: { state: 'live' } });
  });
});
