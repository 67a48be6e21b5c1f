import { createHash } from 'node:crypto';
import { uuidv7 } from '@strongroom/core';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, type TestServer } from '@strongroom/tests';

let s: TestServer;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

const problem = (status: number, code: string) => ({
  status,
  body: expect.objectContaining({ status, code, type: 'about:blank', detail: expect.any(String) }),
});
const admin = new TestDevice('admin');
const PIN = '2026-06-01';
let n = 0;
const newIntentId = () => uuidv7(s.clock.now() + ++n, new Uint8Array(10).fill(n % 256));

/** A user with a published directory and an album pinned to PIN. */
async function owner() {
  const u = await registerUser(s.app);
  const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).body.account_id as string;
  const identity = new TestIdentity(u.address);
  const pub = await call(s.app, 'PUT', '/v1/devices/directory', {
    token: u.access_token,
    raw: identity.signDirectory(accountId, 1, [admin]).slice(),
    contentType: 'application/cbor',
  });
  expect(pub.status).toBe(200);
  const album = await call(s.app, 'POST', '/v1/albums', {
    token: u.access_token,
    body: { device_id: 'admin' },
    version: PIN,
  });
  expect(album.status).toBe(201);
  return { token: u.access_token, accountId, identity, albumId: album.body.album_id as string };
}
const intent = (albumId: string, over: Record<string, unknown> = {}) => ({
  album_id: albumId,
  from_version: PIN,
  to_version: '2026-09-01',
  intent_id: newIntentId(),
  ...over,
});
const propose = (token: string, albumId: string, body: Uint8Array, version = PIN, contentType = 'application/cbor') =>
  call(s.app, 'POST', `/v1/albums/${albumId}/upgrade`, { token, raw: body.slice(), contentType, version });
const status = (token: string, albumId: string, version = PIN) =>
  call(s.app, 'GET', `/v1/albums/${albumId}/upgrade`, { token, version });

describe('POST /v1/albums', () => {
  it('pins the album to the request version; needs an active device from the directory', async () => {
    const u = await registerUser(s.app);
    expect(
      await call(s.app, 'POST', '/v1/albums', { token: u.access_token, body: { device_id: 'admin' } }),
    ).toMatchObject(problem(403, 'error.device.unknown'));
    const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).body
      .account_id as string;
    const later = new TestDevice('later', { addedAt: Math.floor(s.clock.now() / 1000) + 10 });
    await call(s.app, 'PUT', '/v1/devices/directory', {
      token: u.access_token,
      raw: new TestIdentity(u.address).signDirectory(accountId, 1, [admin, later]).slice(),
      contentType: 'application/cbor',
    });
    const r = await call(s.app, 'POST', '/v1/albums', {
      token: u.access_token,
      body: { device_id: 'admin' },
      version: '2026-04-01',
    });
    expect(r).toMatchObject({
      status: 201,
      body: { album_id: expect.stringMatching(/^[0-9a-f-]{36}$/), protocol_version: '2026-04-01' },
    });
    expect(
      await call(s.app, 'POST', '/v1/albums', { token: u.access_token, body: { device_id: 'later' } }),
    ).toMatchObject(problem(403, 'error.device.unknown'));
    s.clock.advance(10_000);
    expect(
      (await call(s.app, 'POST', '/v1/albums', { token: u.access_token, body: { device_id: 'later' } })).status,
    ).toBe(201);
    expect(
      await call(s.app, 'POST', '/v1/albums', { token: u.access_token, body: { device_id: 'admin', name: 'x' } }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(
      await call(s.app, 'POST', '/v1/albums', {
        token: u.access_token,
        body: { device_id: 'admin' },
        version: '2026-01-01',
      }),
    ).toMatchObject(problem(426, 'error.protocol.below_min'));
  });
});

describe('the upgrade ceremony over HTTP', () => {
  it('propose 202, same intent again 202, competing 409 with the live id, GET, abort 204', async () => {
    const o = await owner();
    expect(await status(o.token, o.albumId)).toMatchObject({
      status: 200,
      body: { phase: 'normal', intent_id: null, to_version: null, expires_at: null, in_flight: 0 },
    });
    const i = intent(o.albumId, { deadline_s: 3600 });
    const expires = new Date(s.clock.now() + 3_600_000).toISOString();
    const first = await propose(o.token, o.albumId, admin.signUpgradeIntent(i));
    expect(first).toMatchObject({
      status: 202,
      body: { phase: 'frozen', intent_id: i.intent_id, to_version: '2026-09-01', expires_at: expires, in_flight: 0 },
    });
    s.clock.advance(1000);
    expect(await propose(o.token, o.albumId, admin.signUpgradeIntent(i))).toMatchObject({
      status: 202,
      body: first.body,
    });
    const other = intent(o.albumId);
    expect(await propose(o.token, o.albumId, admin.signUpgradeIntent(other))).toMatchObject({
      ...problem(409, 'error.album.upgrade_in_flight'),
      body: expect.objectContaining({ live_intent_id: i.intent_id }),
    });
    // Reads are never refused for an old version.
    expect(await status(o.token, o.albumId, '2026-03-01')).toMatchObject({ status: 200, body: first.body });
    expect(
      await call(s.app, 'DELETE', `/v1/albums/${o.albumId}/upgrade?intent_id=${other.intent_id}`, {
        token: o.token,
        version: PIN,
      }),
    ).toMatchObject(problem(409, 'error.conflict'));
    expect(
      await call(s.app, 'DELETE', `/v1/albums/${o.albumId}/upgrade`, { token: o.token, version: PIN }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    const del = await call(s.app, 'DELETE', `/v1/albums/${o.albumId}/upgrade?intent_id=${i.intent_id}`, {
      token: o.token,
      version: PIN,
    });
    expect(del.status).toBe(204);
    expect((await status(o.token, o.albumId)).body).toMatchObject({ phase: 'normal' });
    expect(await propose(o.token, o.albumId, admin.signUpgradeIntent(i))).toMatchObject(problem(409, 'error.conflict'));
  });

  it('expiry is received_at + deadline on the server clock, computed at read time', async () => {
    const o = await owner();
    const i = intent(o.albumId, { deadline_s: 60 });
    await propose(o.token, o.albumId, admin.signUpgradeIntent(i));
    s.clock.advance(59_999);
    expect((await status(o.token, o.albumId)).body.phase).toBe('frozen');
    s.clock.advance(1);
    expect((await status(o.token, o.albumId)).body).toEqual({
      phase: 'normal',
      intent_id: null,
      to_version: null,
      expires_at: null,
      in_flight: 0,
    });
    const next = intent(o.albumId);
    expect(await propose(o.token, o.albumId, admin.signUpgradeIntent(next))).toMatchObject({
      status: 202,
      body: { intent_id: next.intent_id, expires_at: new Date(s.clock.now() + 604_800_000).toISOString() },
    });
  });

  it('quiescence filters writes: only the live intent passes (the guard every write calls)', async () => {
    const o = await owner();
    const i = intent(o.albumId);
    await propose(o.token, o.albumId, admin.signUpgradeIntent(i));
    const w = (intentId: string | null, protocolVersion = PIN) =>
      s.deps.writeGuard.checkWrite(
        { accountId: o.accountId, deviceId: 'admin', albumId: o.albumId, intentId, protocolVersion },
        s.clock.now(),
      );
    expect(await w(null)).toMatchObject({
      ok: false,
      code: 'error.upload.album_quiescing',
      data: { live_intent_id: i.intent_id },
    });
    expect(await w(i.intent_id)).toEqual({ ok: true, value: undefined });
    expect(await w(i.intent_id, '2026-05-01')).toMatchObject({
      ok: false,
      code: 'error.protocol.below_album_pin',
      data: { album_pin: PIN },
    });
  });

  it('bounds an intent: deadline_s at most 90 days, to_version a date in the server window; otherwise 400 and nothing stored', async () => {
    const o = await owner();
    const refused: Record<string, unknown>[] = [
      { deadline_s: Number.MAX_SAFE_INTEGER },
      { deadline_s: 7_776_001 },
      { to_version: '9999-12-31' },
      { to_version: '2026-11-02' },
      { to_version: '2026-02-30' },
    ];
    for (const over of refused) {
      expect(await propose(o.token, o.albumId, admin.signUpgradeIntent(intent(o.albumId, over)))).toMatchObject(
        problem(400, 'error.request.invalid'),
      );
      // Nothing stored: every read still answers, and the album is not held.
      expect(await status(o.token, o.albumId)).toMatchObject({
        status: 200,
        body: { phase: 'normal', intent_id: null },
      });
    }
    const longest = intent(o.albumId, { deadline_s: 7_776_000, to_version: '2026-11-01' });
    expect(await propose(o.token, o.albumId, admin.signUpgradeIntent(longest))).toMatchObject({
      status: 202,
      body: {
        intent_id: longest.intent_id,
        to_version: '2026-11-01',
        expires_at: new Date(s.clock.now() + 7_776_000_000).toISOString(),
      },
    });
    expect(await status(o.token, o.albumId)).toMatchObject({
      status: 200,
      body: { phase: 'frozen', intent_id: longest.intent_id },
    });
  });

  it('refuses each bad proposal with its own status and code', async () => {
    const o = await owner();
    const stranger = new TestDevice('stranger');
    const cases: [Uint8Array, number, string, string?][] = [
      [new Uint8Array([0x01]), 400, 'error.request.invalid'],
      [admin.signUpgradeIntent(intent(o.albumId, { deadline_s: 1.5 })), 400, 'error.request.invalid'],
      [
        admin.signUpgradeIntent(intent(o.albumId, { album_id: uuidv7(1, new Uint8Array(10)) })),
        400,
        'error.album.intent_mismatch',
      ],
      [admin.signUpgradeIntent(intent(o.albumId, { from_version: '2026-05-01' })), 400, 'error.album.intent_mismatch'],
      [stranger.signUpgradeIntent(intent(o.albumId)), 403, 'error.album.proposer_invalid'],
      [admin.signUpgradeIntent(intent(o.albumId), { tamper: 'ed25519' }), 403, 'error.album.proposer_invalid'],
      [admin.signUpgradeIntent(intent(o.albumId), { tamper: 'mldsa65' }), 403, 'error.album.proposer_invalid'],
      [admin.signUpgradeIntent(intent(o.albumId)), 426, 'error.protocol.below_album_pin', '2026-05-01'],
    ];
    for (const [body, code, name, version] of cases)
      expect(await propose(o.token, o.albumId, body, version)).toMatchObject(problem(code, name));
    const pinned = await propose(o.token, o.albumId, admin.signUpgradeIntent(intent(o.albumId)), '2026-05-01');
    expect(pinned.body).toMatchObject({ album_pin: PIN });
    expect(
      await propose(o.token, o.albumId, admin.signUpgradeIntent(intent(o.albumId)), PIN, 'application/json'),
    ).toMatchObject(problem(415, 'error.request.unsupported_media_type'));
    expect(
      await propose(o.token, uuidv7(2, new Uint8Array(10)), admin.signUpgradeIntent(intent(o.albumId))),
    ).toMatchObject(problem(404, 'error.not_found'));
    expect(await propose(o.token, 'not-an-id', admin.signUpgradeIntent(intent(o.albumId)))).toMatchObject(
      problem(404, 'error.not_found'),
    );
    expect(await status(o.token, 'not-an-id')).toMatchObject(problem(404, 'error.not_found'));
    const intruder = await owner();
    expect(await status(intruder.token, o.albumId)).toMatchObject(problem(404, 'error.not_found'));
    expect(
      await call(s.app, 'DELETE', `/v1/albums/${o.albumId}/upgrade?intent_id=${newIntentId()}`, {
        token: intruder.token,
        version: PIN,
      }),
    ).toMatchObject(problem(404, 'error.not_found'));
    expect(await call(s.app, 'GET', `/v1/albums/${o.albumId}/upgrade`, { version: PIN })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
    expect(
      await call(s.app, 'PATCH', `/v1/albums/${o.albumId}/upgrade`, { token: o.token, version: PIN }),
    ).toMatchObject(problem(405, 'error.request.method_not_allowed'));
    expect((await status(o.token, o.albumId)).body.phase).toBe('normal');
  });
});

describe('the album guard covers links and guest drops', () => {
  const KEY = Buffer.from('wrapped keys under the link secret').toString('base64url');
  const SEAL = Buffer.from('x25519 public key of the link......').toString('base64url');
  const link = (token: string, body: Record<string, unknown>, version = PIN) =>
    call(s.app, 'POST', '/v1/links', { token, body, version });
  const drop = (linkId: string, size = 10, version = PIN) =>
    call(s.app, 'POST', `/v1/links/${linkId}/drops`, { body: { declared_size: size }, version });

  it('a share or upload link written below the album pin is 426, and so is a guest drop; nothing is created', async () => {
    const o = await owner();
    expect(await link(o.token, { kind: 'share', album_id: o.albumId, wrapped_key: KEY }, '2026-05-01')).toMatchObject({
      ...problem(426, 'error.protocol.below_album_pin'),
      body: expect.objectContaining({ album_pin: PIN }),
    });
    expect(await link(o.token, { kind: 'upload', album_id: o.albumId, seal_key: SEAL }, '2026-05-01')).toMatchObject(
      problem(426, 'error.protocol.below_album_pin'),
    );
    expect((await call(s.app, 'GET', '/v1/links', { token: o.token })).body.links).toEqual([]);
    // A share link of single assets names no album: nothing to pin.
    expect((await link(o.token, { kind: 'share', wrapped_key: KEY }, '2026-05-01')).status).toBe(201);
    const up = await link(o.token, { kind: 'upload', album_id: o.albumId, seal_key: SEAL });
    expect(up.status).toBe(201);
    expect(await drop(up.body.link_id, 10, '2026-05-01')).toMatchObject(problem(426, 'error.protocol.below_album_pin'));
    expect((await call(s.app, 'GET', `/v1/links/${up.body.link_id}/drops`, { token: o.token })).body.drops).toEqual([]);
    expect((await drop(up.body.link_id)).status).toBe(201);
  });

  it('an open guest drop keeps the album quiescing (in_flight); during quiescence no drop opens and a link needs the live intent', async () => {
    const o = await owner();
    const up = await link(o.token, { kind: 'upload', album_id: o.albumId, seal_key: SEAL });
    const opened = await drop(up.body.link_id);
    expect(opened.status).toBe(201);
    const i = intent(o.albumId);
    expect(await propose(o.token, o.albumId, admin.signUpgradeIntent(i))).toMatchObject({
      status: 202,
      body: { phase: 'quiescing', in_flight: 1 },
    });
    expect(await status(o.token, o.albumId)).toMatchObject({
      status: 200,
      body: { phase: 'quiescing', intent_id: i.intent_id, in_flight: 1 },
    });
    // No new drop while the album quiesces (a guest cannot name the intent).
    const refused = await drop(up.body.link_id);
    expect(refused).toMatchObject(problem(409, 'error.upload.album_quiescing'));
    // Answered as every write to a quiescing album is (spec §14.9): the live intent is named.
    expect(refused.body).toMatchObject({ live_intent_id: i.intent_id });
    // Links on the album need the live intent, as upload sessions do.
    expect(await link(o.token, { kind: 'share', album_id: o.albumId, wrapped_key: KEY })).toMatchObject(
      problem(409, 'error.upload.album_quiescing'),
    );
    expect(
      await link(o.token, { kind: 'upload', album_id: o.albumId, seal_key: SEAL, intent_id: newIntentId() }),
    ).toMatchObject(problem(409, 'error.upload.album_quiescing'));
    expect(
      (await link(o.token, { kind: 'share', album_id: o.albumId, wrapped_key: KEY, intent_id: i.intent_id })).status,
    ).toBe(201);
    // The guest's drop in flight still completes; only then is the album frozen.
    const token = opened.body.upload_token as string;
    const bytes = new TextEncoder().encode('0123456789');
    const guest = { headers: { authorization: `Upload ${token}` }, version: PIN };
    expect(
      (
        await call(s.app, 'PUT', `/upload/${opened.body.upload_id}`, {
          ...guest,
          raw: bytes.slice(),
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBe(200);
    expect((await status(o.token, o.albumId)).body).toMatchObject({ phase: 'quiescing', in_flight: 1 });
    const hash = createHash('sha256').update(bytes).digest('hex');
    expect(
      (
        await call(s.app, 'POST', `/upload/${opened.body.upload_id}/finalize`, {
          ...guest,
          body: { content_hash: hash },
        })
      ).status,
    ).toBe(200);
    expect((await status(o.token, o.albumId)).body).toMatchObject({ phase: 'frozen', in_flight: 0 });
  });
});
