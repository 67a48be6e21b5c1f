import { createHash } from 'node:crypto';
import { uuidv7 } from '@strongroom/core';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, type CallOptions, type TestServer } from '@strongroom/tests';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const GRACE_S = 600;
const DROP_TTL_S = 300; // under the access token's 15 minutes
const KEY = Buffer.from('wrapped keys under the link secret').toString('base64url');
const SEAL = Buffer.from('x25519 public key of the link......').toString('base64url');

let s: TestServer;
beforeEach(async () => {
  s = await testServer({
    SVC_QUOTA_SOFT_BYTES: '600',
    SVC_QUOTA_HARD_BYTES: '1000',
    SVC_QUOTA_GRACE_S: String(GRACE_S),
    SVC_UPLOAD_TTL_S: '600',
    SVC_DROP_TTL_S: String(DROP_TTL_S),
    SVC_FEDERATED_BUDGET_PCT: '30',
    SVC_FEDERATION_PEERS: 'https://peer.example,https://other.example,https://third.example',
  });
});
afterEach(async () => {
  await s.close();
});

const problem = (status: number, code: string) => ({ status, body: expect.objectContaining({ status, code }) });

/** A registered account with a published directory listing `phone`. */
async function user() {
  const u = await registerUser(s.app);
  const token = u.access_token;
  const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  const put = await call(s.app, 'PUT', '/v1/devices/directory', {
    token,
    raw: raw(dir),
    contentType: 'application/cbor',
  });
  if (put.status >= 300) throw new Error(`directory: ${put.status} ${JSON.stringify(put.body)}`);
  return { token, accountId };
}
const as = (token: string, actAs?: string): CallOptions => ({
  token,
  ...(actAs ? { headers: { 'x-svc-act-as': actAs } } : {}),
});
const quota = async (o: CallOptions) => (await call(s.app, 'GET', '/quota', o)).body;
const upload = (o: CallOptions, body: Record<string, unknown>) =>
  call(s.app, 'POST', '/upload', { ...o, body: { device_id: 'phone', kind: 'original', ...body } });
const put = (o: CallOptions, id: string, data: Uint8Array) =>
  call(s.app, 'PUT', `/upload/${id}`, { ...o, raw: raw(data), contentType: 'application/octet-stream' });
const finalize = (o: CallOptions, id: string, hash: string) =>
  call(s.app, 'POST', `/upload/${id}/finalize`, { ...o, body: { content_hash: hash } });
async function album(o: CallOptions): Promise<string> {
  const r = await call(s.app, 'POST', '/v1/albums', { ...o, body: { device_id: 'phone' } });
  expect(r.status).toBe(201);
  return r.body.album_id;
}
/** Fills the account to `size` bytes with one stored original. */
async function fill(o: CallOptions, size: number, seed = 9): Promise<string> {
  const data = bytes(size, seed);
  const u = await upload(o, { declared_size: size });
  expect(u.status).toBe(201);
  expect((await put(o, u.body.upload_id, data)).status).toBe(200);
  expect((await finalize(o, u.body.upload_id, sha(data))).status).toBe(200);
  return u.body.upload_id;
}
const guest = (token: string): CallOptions => ({ headers: { authorization: `Upload ${token}` } });

describe('sponsored accounts', () => {
  it('have no identity of their own: acting as one, no handle, public record, display name or device directory (403 error.sponsored.no_identity)', async () => {
    const sponsor = await user();
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: sponsor.token })).body.account_id as string;
    const refused = problem(403, 'error.sponsored.no_identity');
    expect(
      await call(s.app, 'PUT', '/v1/discovery/handle', { ...as(sponsor.token, kid), body: { user: 'kid' } }),
    ).toMatchObject(refused);
    expect(
      await call(s.app, 'PUT', '/v1/discovery/public', { ...as(sponsor.token, kid), body: { published: true } }),
    ).toMatchObject(refused);
    expect(
      await call(s.app, 'PATCH', '/v1/auth/profile', {
        ...as(sponsor.token, kid),
        body: { display_name: 'Little Bobby' },
      }),
    ).toMatchObject(refused);
    const dir = new TestIdentity(kid).signDirectory(kid, 1, [new TestDevice('phone')]);
    expect(
      await call(s.app, 'PUT', '/v1/devices/directory', {
        ...as(sponsor.token, kid),
        raw: raw(dir),
        contentType: 'application/cbor',
      }),
    ).toMatchObject(refused);
    // Nothing changed: its profile still has no name or handle, and the handle is free for anyone.
    expect(await call(s.app, 'GET', '/v1/auth/profile', as(sponsor.token, kid))).toMatchObject({
      status: 200,
      body: { account_id: kid, address: null, display_name: null, handle: null },
    });
    expect(await call(s.app, 'GET', '/v1/devices/directory', as(sponsor.token, kid))).toMatchObject({ status: 404 });
    expect(
      (await call(s.app, 'PUT', '/v1/discovery/handle', { token: sponsor.token, body: { user: 'kid' } })).status,
    ).toBe(200);
    // Reading its profile, and a patch that changes nothing, still work.
    expect((await call(s.app, 'PATCH', '/v1/auth/profile', { ...as(sponsor.token, kid), body: {} })).status).toBe(200);
  });
  it('are created by a registered account, listed, and acted as by their owners only', async () => {
    const sponsor = await user();
    const created = await call(s.app, 'POST', '/v1/sponsored', { token: sponsor.token });
    expect(created).toMatchObject({ status: 201, body: { account_id: expect.stringMatching(/^[0-9a-f-]{36}$/) } });
    const kid = created.body.account_id as string;
    expect(await call(s.app, 'GET', '/v1/sponsored', { token: sponsor.token })).toMatchObject({
      status: 200,
      body: {
        sponsored: [
          {
            account_id: kid,
            sponsor_id: sponsor.accountId,
            owners: [sponsor.accountId],
            created_at: expect.any(String),
          },
        ],
      },
    });
    // Acting as it: the profile is the sponsored account's, with no address, name or password.
    expect(await call(s.app, 'GET', '/v1/auth/profile', as(sponsor.token, kid))).toMatchObject({
      status: 200,
      body: { account_id: kid, address: null, display_name: null },
    });
    // Anyone else, or an id that is no sponsored account of theirs, is refused the same way.
    const stranger = await user();
    expect(await call(s.app, 'GET', '/v1/auth/profile', as(stranger.token, kid))).toMatchObject(
      problem(403, 'error.auth.not_an_owner'),
    );
    expect(await call(s.app, 'GET', '/quota', as(sponsor.token, stranger.accountId))).toMatchObject(
      problem(403, 'error.auth.not_an_owner'),
    );
    expect(await call(s.app, 'GET', '/quota', as(sponsor.token, 'not-an-id'))).toMatchObject(
      problem(403, 'error.auth.not_an_owner'),
    );
    expect(await call(s.app, 'GET', '/v1/sponsored', { token: stranger.token })).toMatchObject({
      status: 200,
      body: { sponsored: [] },
    });
    // Without a token the header changes nothing: still 401.
    expect((await call(s.app, 'GET', '/quota', { headers: { 'x-svc-act-as': kid } })).status).toBe(401);
  });

  it('cannot sponsor, cannot own, and cannot sign in', async () => {
    const sponsor = await user();
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: sponsor.token })).body.account_id;
    expect(await call(s.app, 'POST', '/v1/sponsored', as(sponsor.token, kid))).toMatchObject(
      problem(403, 'error.sponsored.cannot_sponsor'),
    );
    const other = (await call(s.app, 'POST', '/v1/sponsored', { token: sponsor.token })).body.account_id;
    expect(
      await call(s.app, 'POST', `/v1/sponsored/${other}/owners`, { token: sponsor.token, body: { account_id: kid } }),
    ).toMatchObject(problem(403, 'error.sponsored.cannot_sponsor'));
    // A registered account the operator put under another's payment cannot sponsor either.
    const payee = await user();
    expect((await s.deps.sponsorship.setSponsor(payee.accountId, sponsor.accountId)).ok).toBe(true);
    expect(await call(s.app, 'POST', '/v1/sponsored', { token: payee.token })).toMatchObject(
      problem(403, 'error.sponsored.cannot_sponsor'),
    );
    // No address and no password: nothing to sign in with.
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/login', {
          body: { address: `sponsored:${kid}`, password: 'correct horse battery staple' },
        })
      ).status,
    ).toBe(401);
  });

  it('owners are added and removed; the sponsor stays', async () => {
    const sponsor = await user();
    const partner = await user();
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: sponsor.token })).body.account_id;
    expect(
      await call(s.app, 'POST', `/v1/sponsored/${kid}/owners`, {
        token: partner.token,
        body: { account_id: partner.accountId },
      }),
    ).toMatchObject(problem(403, 'error.auth.not_an_owner'));
    expect(
      await call(s.app, 'POST', `/v1/sponsored/${kid}/owners`, {
        token: sponsor.token,
        body: { account_id: '01900000-0000-7000-8000-000000000000' },
      }),
    ).toMatchObject(problem(404, 'error.not_found'));
    expect(
      await call(s.app, 'POST', `/v1/sponsored/${kid}/owners`, {
        token: sponsor.token,
        body: { account_id: partner.accountId },
      }),
    ).toMatchObject({
      status: 200,
      body: { account_id: kid, owners: [sponsor.accountId, partner.accountId] },
    });
    expect((await call(s.app, 'GET', '/v1/auth/profile', as(partner.token, kid))).body.account_id).toBe(kid);
    expect((await call(s.app, 'GET', '/v1/sponsored', { token: partner.token })).body.sponsored).toHaveLength(1);
    expect(
      await call(s.app, 'DELETE', `/v1/sponsored/${kid}/owners/${sponsor.accountId}`, { token: partner.token }),
    ).toMatchObject(problem(409, 'error.conflict'));
    expect(
      (await call(s.app, 'DELETE', `/v1/sponsored/${kid}/owners/${partner.accountId}`, { token: sponsor.token }))
        .status,
    ).toBe(204);
    expect(
      await call(s.app, 'DELETE', `/v1/sponsored/${kid}/owners/${partner.accountId}`, { token: sponsor.token }),
    ).toMatchObject(problem(404, 'error.not_found'));
    expect(await call(s.app, 'GET', '/v1/auth/profile', as(partner.token, kid))).toMatchObject(
      problem(403, 'error.auth.not_an_owner'),
    );
    expect(
      await call(s.app, 'POST', `/v1/sponsored/${kid}/owners`, { body: { account_id: partner.accountId } }),
    ).toMatchObject({ status: 401 });
  });

  it("uploads as it are charged to the sponsor, with a device of the acting owner, and follow the sponsor's state", async () => {
    const sponsor = await user();
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: sponsor.token })).body.account_id;
    const acting = as(sponsor.token, kid);
    const data = bytes(300, 3);
    const u = await upload(acting, { declared_size: 300 });
    expect(u).toMatchObject({ status: 201, body: { state: 'Pending' } });
    expect(await quota(acting)).toMatchObject({ used: 300, reserved: 300 });
    expect(await quota({ token: sponsor.token })).toMatchObject({ used: 300, reserved: 300 });
    await put(acting, u.body.upload_id, data);
    expect(await finalize(acting, u.body.upload_id, sha(data))).toMatchObject({
      status: 200,
      body: { state: 'Completed' },
    });
    const asset = await call(s.app, 'GET', `/v1/assets/${u.body.upload_id}`, acting);
    expect(asset.body).toMatchObject({ owner_id: kid, upload_user_id: kid });
    expect(await quota({ token: sponsor.token })).toMatchObject({ used: 300, reserved: 0 });
    // An album made as it belongs to it; a device unknown to the owner's directory is refused.
    expect(await call(s.app, 'POST', '/v1/albums', { ...acting, body: { device_id: 'tablet' } })).toMatchObject(
      problem(403, 'error.device.unknown'),
    );
    expect((await call(s.app, 'POST', '/v1/albums', { ...acting, body: { device_id: 'phone' } })).status).toBe(201);
    // The sponsor's hard limit bounds it: 300 + 701 > 1000.
    expect(await upload(acting, { declared_size: 701 })).toMatchObject(problem(403, 'error.quota.exceeded'));
    await s.deps.quota.suspend(sponsor.accountId);
    expect(await upload(acting, { declared_size: 1 })).toMatchObject(problem(403, 'error.quota.write_refused'));
    expect((await quota(acting)).state).toBe('Suspended');
  });

  it("an upgrade proposed as it is signed by a device of the acting owner's directory", async () => {
    const u = await registerUser(s.app);
    const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).body
      .account_id as string;
    const phone = new TestDevice('phone');
    const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [phone]);
    expect(
      (
        await call(s.app, 'PUT', '/v1/devices/directory', {
          token: u.access_token,
          raw: raw(dir),
          contentType: 'application/cbor',
        })
      ).status,
    ).toBe(200);
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: u.access_token })).body.account_id;
    const acting = as(u.access_token, kid);
    const albumId = (
      await call(s.app, 'POST', '/v1/albums', { ...acting, body: { device_id: 'phone' }, version: '2026-06-01' })
    ).body.album_id;
    const body = phone.signUpgradeIntent({
      album_id: albumId,
      from_version: '2026-06-01',
      to_version: '2026-09-01',
      intent_id: uuidv7(s.clock.now(), new Uint8Array(10).fill(3)),
    });
    const proposed = await call(s.app, 'POST', `/v1/albums/${albumId}/upgrade`, {
      ...acting,
      raw: raw(body),
      contentType: 'application/cbor',
      version: '2026-06-01',
    });
    expect(proposed).toMatchObject({ status: 202, body: { phase: 'frozen' } });
    // The album is the sponsored account's: its owner's own requests do not see it.
    expect(
      (await call(s.app, 'GET', `/v1/albums/${albumId}/upgrade`, { token: u.access_token, version: '2026-06-01' }))
        .status,
    ).toBe(404);
  });
});

describe('share links', () => {
  it('are created, read anonymously (wrapped key and what it covers only), listed and revoked', async () => {
    const a = await user();
    const albumId = await album({ token: a.token });
    const assetId = await fill({ token: a.token }, 10);
    const c = await call(s.app, 'POST', '/v1/links', {
      token: a.token,
      body: { kind: 'share', album_id: albumId, asset_ids: [assetId], wrapped_key: KEY },
    });
    expect(c).toMatchObject({
      status: 201,
      body: { link_id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/), kind: 'share', expires_at: null },
    });
    const id = c.body.link_id as string;
    const read = await call(s.app, 'GET', `/v1/links/${id}`, {});
    expect(read).toMatchObject({
      status: 200,
      body: { link_id: id, kind: 'share', album_id: albumId, asset_ids: [assetId], wrapped_key: KEY, expires_at: null },
    });
    expect(Object.keys(read.body).sort()).toEqual([
      'album_id',
      'asset_ids',
      'expires_at',
      'kind',
      'link_id',
      'wrapped_key',
    ]);
    // The protocol header is still required.
    expect(await call(s.app, 'GET', `/v1/links/${id}`, { version: null })).toMatchObject(
      problem(426, 'error.protocol.unsupported'),
    );
    expect(await call(s.app, 'GET', '/v1/links', { token: a.token })).toMatchObject({
      status: 200,
      body: {
        links: [
          { link_id: id, kind: 'share', status: 'active', album_id: albumId, asset_ids: [assetId], revoked_at: null },
        ],
      },
    });
    const b = await user();
    expect(await call(s.app, 'DELETE', `/v1/links/${id}`, { token: b.token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    expect((await call(s.app, 'DELETE', `/v1/links/${id}`, { token: a.token })).status).toBe(204);
    expect(await call(s.app, 'GET', `/v1/links/${id}`, {})).toMatchObject(problem(404, 'error.not_found'));
    expect((await call(s.app, 'GET', '/v1/links', { token: a.token })).body.links[0]).toMatchObject({
      status: 'revoked',
      revoked_at: expect.any(String),
    });
    expect(await call(s.app, 'DELETE', `/v1/links/${id}`, { token: a.token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    expect(await call(s.app, 'GET', '/v1/links/AAAAAAAAAAAAAAAAAAAAAA', {})).toMatchObject(
      problem(404, 'error.not_found'),
    );
    expect(await call(s.app, 'GET', '/v1/links/short', {})).toMatchObject(problem(404, 'error.not_found'));
  });

  it('expire by time, and refuse bad input', async () => {
    const a = await user();
    const albumId = await album({ token: a.token });
    const at = new Date(s.clock.now() + 60_000).toISOString();
    const c = await call(s.app, 'POST', '/v1/links', {
      token: a.token,
      body: { kind: 'share', album_id: albumId, wrapped_key: KEY, expires_at: at },
    });
    expect(c).toMatchObject({ status: 201, body: { expires_at: at } });
    expect((await call(s.app, 'GET', `/v1/links/${c.body.link_id}`, {})).status).toBe(200);
    s.clock.advance(60_000);
    expect(await call(s.app, 'GET', `/v1/links/${c.body.link_id}`, {})).toMatchObject(problem(404, 'error.not_found'));
    expect((await call(s.app, 'GET', '/v1/links', { token: a.token })).body.links[0].status).toBe('expired');
    const bad = (body: Record<string, unknown>) => call(s.app, 'POST', '/v1/links', { token: a.token, body });
    expect(
      await bad({ kind: 'share', wrapped_key: KEY, expires_at: new Date(s.clock.now() - 1).toISOString() }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(await bad({ kind: 'share', wrapped_key: 'not base64url!' })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(await bad({ kind: 'share', wrapped_key: Buffer.alloc(4097, 1).toString('base64url') })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(await bad({ kind: 'share', wrapped_key: KEY, seal_key: SEAL })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(await bad({ kind: 'upload', seal_key: SEAL })).toMatchObject(problem(400, 'error.request.invalid'));
    expect(await bad({ kind: 'other', wrapped_key: KEY })).toMatchObject(problem(400, 'error.request.invalid'));
    expect(await bad({ kind: 'share', wrapped_key: KEY, expires_at: 'tomorrow' })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    const b = await user();
    expect(
      await call(s.app, 'POST', '/v1/links', {
        token: b.token,
        body: { kind: 'share', album_id: albumId, wrapped_key: KEY },
      }),
    ).toMatchObject(problem(404, 'error.not_found'));
    expect((await call(s.app, 'POST', '/v1/links', { body: { kind: 'share', wrapped_key: KEY } })).status).toBe(401);
  });

  it('are metadata growth: refused in GraceExpired and Suspended, while revoking always works', async () => {
    const a = await user();
    const albumId = await album({ token: a.token });
    const make = () =>
      call(s.app, 'POST', '/v1/links', {
        token: a.token,
        body: { kind: 'share', album_id: albumId, wrapped_key: KEY },
      });
    const made = await make();
    expect(made.status).toBe(201);
    await fill({ token: a.token }, 1000);
    expect((await quota({ token: a.token })).state).toBe('HardExceeded');
    expect((await make()).status).toBe(201); // HardExceeded admits metadata growth
    s.clock.advance((GRACE_S + 1) * 1000);
    expect((await quota({ token: a.token })).state).toBe('GraceExpired');
    expect(await make()).toMatchObject(problem(403, 'error.quota.write_refused'));
    expect(
      await call(s.app, 'POST', '/v1/links', {
        token: a.token,
        body: { kind: 'upload', album_id: albumId, seal_key: SEAL },
      }),
    ).toMatchObject(problem(403, 'error.quota.write_refused'));
    expect((await call(s.app, 'DELETE', `/v1/links/${made.body.link_id}`, { token: a.token })).status).toBe(204);
    const b = await user();
    const bAlbum = await album({ token: b.token });
    await s.deps.quota.suspend(b.accountId);
    expect(
      await call(s.app, 'POST', '/v1/links', {
        token: b.token,
        body: { kind: 'share', album_id: bAlbum, wrapped_key: KEY },
      }),
    ).toMatchObject(problem(403, 'error.quota.write_refused'));
  });
});

describe('web-upload links and drops', () => {
  async function uploadLink(token: string, extra: Record<string, unknown> = {}) {
    const albumId = await album({ token });
    const c = await call(s.app, 'POST', '/v1/links', {
      token,
      body: { kind: 'upload', album_id: albumId, seal_key: SEAL, ...extra },
    });
    expect(c.status).toBe(201);
    return c.body.link_id as string;
  }
  const openDrop = (linkId: string, body: Record<string, unknown>) =>
    call(s.app, 'POST', `/v1/links/${linkId}/drops`, { body });

  it('a guest opens a drop charged to the owner, sends and finalizes it with its token only; the owner lists and adopts it', async () => {
    const owner = await user();
    const linkId = await uploadLink(owner.token, { max_bytes: 800 });
    const read = await call(s.app, 'GET', `/v1/links/${linkId}`, {});
    expect(read).toMatchObject({
      status: 200,
      body: {
        link_id: linkId,
        kind: 'upload',
        album_id: expect.any(String),
        seal_key: SEAL,
        max_bytes: 800,
        expires_at: null,
      },
    });
    expect(Object.keys(read.body).sort()).toEqual([
      'album_id',
      'expires_at',
      'kind',
      'link_id',
      'max_bytes',
      'seal_key',
    ]);
    const d = await openDrop(linkId, { declared_size: 300 });
    expect(d).toMatchObject({
      status: 201,
      body: {
        upload_id: expect.any(String),
        upload_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        expires_at: expect.any(String),
      },
    });
    const { upload_id: id, upload_token: token } = d.body;
    expect(await quota({ token: owner.token })).toMatchObject({ used: 300, reserved: 300 });
    // The token is stored hashed: nothing in the database holds it.
    expect(JSON.stringify(await s.deps.stores.links.findDrop(id))).not.toContain(token);
    const data = bytes(280, 5);
    // No read access, no other upload, no Bearer use.
    expect((await call(s.app, 'GET', `/upload/${id}`, guest(token))).status).toBe(401);
    expect((await call(s.app, 'GET', '/quota', guest(token))).status).toBe(401);
    const other = await openDrop(linkId, { declared_size: 10 });
    expect((await put(guest(token), other.body.upload_id, data)).status).toBe(401);
    expect((await put(guest('A'.repeat(43)), id, data)).status).toBe(401);
    expect(
      (
        await call(s.app, 'POST', '/upload', {
          ...guest(token),
          body: { declared_size: 1, kind: 'original', device_id: 'phone' },
        })
      ).status,
    ).toBe(401);
    expect(await put(guest(token), id, data)).toMatchObject({ status: 200, body: { state: 'WaitingForProcessing' } });
    expect(await finalize(guest(token), id, sha(data))).toMatchObject({
      status: 200,
      body: { state: 'Completed', asset_id: id },
    });
    expect(await quota({ token: owner.token })).toMatchObject({ used: 290, reserved: 10 });
    const listed = await call(s.app, 'GET', `/v1/links/${linkId}/drops`, { token: owner.token });
    expect(listed.status).toBe(200);
    expect(listed.body.drops).toHaveLength(2);
    expect(listed.body.drops).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ upload_id: id, state: 'ready', declared_size: 300 }),
        expect.objectContaining({ upload_id: other.body.upload_id, state: 'uploading', declared_size: 10 }),
      ]),
    );
    // A pending drop is not yet the owner's asset.
    expect((await call(s.app, 'GET', `/v1/assets/${id}`, { token: owner.token })).status).toBe(404);
    expect(await call(s.app, 'POST', `/v1/drops/${other.body.upload_id}/adopt`, { token: owner.token })).toMatchObject(
      problem(409, 'error.conflict'),
    );
    const stranger = await user();
    expect(await call(s.app, 'POST', `/v1/drops/${id}/adopt`, { token: stranger.token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    expect(await call(s.app, 'GET', `/v1/links/${linkId}/drops`, { token: stranger.token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    const adopted = await call(s.app, 'POST', `/v1/drops/${id}/adopt`, { token: owner.token });
    expect(adopted).toMatchObject({
      status: 200,
      body: { asset_id: id, owner_id: owner.accountId, state: 'live', blobs: [{ kind: 'original', size: 280 }] },
    });
    expect((await call(s.app, 'GET', `/v1/assets/${id}`, { token: owner.token })).status).toBe(200);
    expect(await quota({ token: owner.token })).toMatchObject({ used: 290 }); // adoption charges nothing more
    expect(
      (await call(s.app, 'GET', `/v1/links/${linkId}/drops`, { token: owner.token })).body.drops.find(
        (d: { upload_id: string }) => d.upload_id === id,
      ).state,
    ).toBe('adopted');
    // The guest's token does nothing once finalized.
    expect(await put(guest(token), id, data)).toMatchObject(problem(409, 'error.conflict'));
  });

  it("max_bytes and the owner's hard limit both bound a drop at creation", async () => {
    const owner = await user();
    const linkId = await uploadLink(owner.token, { max_bytes: 500 });
    expect((await openDrop(linkId, { declared_size: 400 })).status).toBe(201);
    expect(await openDrop(linkId, { declared_size: 101 })).toMatchObject(problem(403, 'error.quota.exceeded'));
    expect((await openDrop(linkId, { declared_size: 100 })).status).toBe(201);
    const wide = await uploadLink(owner.token);
    expect(await openDrop(wide, { declared_size: 501 })).toMatchObject(problem(403, 'error.quota.exceeded'));
    expect((await openDrop(wide, { declared_size: 500 })).status).toBe(201);
    expect(await quota({ token: owner.token })).toMatchObject({ used: 1000, reserved: 1000 });
    expect(await openDrop(wide, { declared_size: 0 })).toMatchObject(problem(400, 'error.request.invalid'));
    expect(await openDrop('AAAAAAAAAAAAAAAAAAAAAA', { declared_size: 1 })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    // A share link takes no drops.
    const share = await call(s.app, 'POST', '/v1/links', {
      token: owner.token,
      body: { kind: 'share', wrapped_key: KEY },
    });
    expect(await openDrop(share.body.link_id, { declared_size: 1 })).toMatchObject(problem(404, 'error.not_found'));
  });

  it('drops are refused in GraceExpired and Suspended, and through revoked or expired links', async () => {
    const owner = await user();
    const linkId = await uploadLink(owner.token, {
      expires_at: new Date(s.clock.now() + (GRACE_S + 100) * 1000).toISOString(),
    });
    const revoked = await uploadLink(owner.token);
    expect((await call(s.app, 'DELETE', `/v1/links/${revoked}`, { token: owner.token })).status).toBe(204);
    expect(await openDrop(revoked, { declared_size: 1 })).toMatchObject(problem(404, 'error.not_found'));
    await s.deps.quota.suspend(owner.accountId);
    expect(await openDrop(linkId, { declared_size: 1 })).toMatchObject(problem(403, 'error.quota.write_refused'));
    await s.deps.quota.unsuspend(owner.accountId);
    await fill({ token: owner.token }, 1000);
    expect(await openDrop(linkId, { declared_size: 1 })).toMatchObject(problem(403, 'error.quota.exceeded'));
    s.clock.advance((GRACE_S + 1) * 1000);
    expect(await openDrop(linkId, { declared_size: 1 })).toMatchObject(problem(403, 'error.quota.write_refused'));
    s.clock.advance(100_000);
    expect(await openDrop(linkId, { declared_size: 1 })).toMatchObject(problem(404, 'error.not_found'));
  });

  it('a discarded or expired drop is freed by the sweep and not before', async () => {
    const owner = await user();
    const linkId = await uploadLink(owner.token);
    const send = async (size: number, fillByte: number) => {
      const d = await openDrop(linkId, { declared_size: size });
      const data = bytes(size, fillByte);
      await put(guest(d.body.upload_token), d.body.upload_id, data);
      expect((await finalize(guest(d.body.upload_token), d.body.upload_id, sha(data))).status).toBe(200);
      return d.body.upload_id as string;
    };
    const discarded = await send(100, 1);
    const expiring = await send(200, 2);
    const open = await openDrop(linkId, { declared_size: 50 });
    expect(await quota({ token: owner.token })).toMatchObject({ used: 350, reserved: 50 });
    expect((await call(s.app, 'DELETE', `/v1/drops/${discarded}`, { token: owner.token })).status).toBe(204);
    expect(await call(s.app, 'DELETE', `/v1/drops/${discarded}`, { token: owner.token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    // An open drop is cancelled at once: its reservation goes now.
    expect((await call(s.app, 'DELETE', `/v1/drops/${open.body.upload_id}`, { token: owner.token })).status).toBe(204);
    expect(await quota({ token: owner.token })).toMatchObject({ used: 300, reserved: 0 });
    const states = async () =>
      Object.fromEntries(
        (await call(s.app, 'GET', `/v1/links/${linkId}/drops`, { token: owner.token })).body.drops.map(
          (d: { upload_id: string; state: string }) => [d.upload_id, d.state],
        ),
      );
    expect(await states()).toEqual({
      [discarded]: 'discarded',
      [expiring]: 'ready',
      [open.body.upload_id]: 'discarded',
    });
    await s.deps.quota.sweep();
    expect(await quota({ token: owner.token })).toMatchObject({ used: 200 });
    s.clock.advance(DROP_TTL_S * 1000);
    expect(await states()).toEqual({
      [discarded]: 'discarded',
      [expiring]: 'expired',
      [open.body.upload_id]: 'discarded',
    });
    expect(await call(s.app, 'POST', `/v1/drops/${expiring}/adopt`, { token: owner.token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    expect(await quota({ token: owner.token })).toMatchObject({ used: 200 }); // not before the sweep
    await s.deps.quota.sweep();
    expect(await quota({ token: owner.token })).toMatchObject({ used: 0 });
  });

  it("a sponsored account's links and drops are charged to its sponsor", async () => {
    const sponsor = await user();
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: sponsor.token })).body.account_id;
    const albumId = await album(as(sponsor.token, kid));
    const c = await call(s.app, 'POST', '/v1/links', {
      ...as(sponsor.token, kid),
      body: { kind: 'upload', album_id: albumId, seal_key: SEAL },
    });
    expect(c.status).toBe(201);
    expect(
      (await call(s.app, 'GET', '/v1/links', { token: sponsor.token })).body.links.map(
        (l: { link_id: string }) => l.link_id,
      ),
    ).not.toContain(c.body.link_id);
    expect(
      (await call(s.app, 'GET', '/v1/links', as(sponsor.token, kid))).body.links.map(
        (l: { link_id: string }) => l.link_id,
      ),
    ).toEqual([c.body.link_id]);
    expect((await openDrop(c.body.link_id, { declared_size: 700 })).status).toBe(201);
    expect(await quota({ token: sponsor.token })).toMatchObject({ used: 700, reserved: 700 });
    expect(await openDrop(c.body.link_id, { declared_size: 301 })).toMatchObject(problem(403, 'error.quota.exceeded'));
  });
});

describe('federated blobs', () => {
  const PEER = 'https://peer.example';
  const fed = (o: CallOptions, data: Uint8Array, peer = PEER) =>
    upload(o, { kind: 'federated', source_peer: peer, declared_size: data.length, content_hash: sha(data) });

  it('are cached for the caller, charged to it, deduplicated, and bounded per source peer', async () => {
    const a = await user();
    const one = bytes(200, 1);
    const o = await fed({ token: a.token }, one);
    expect(o).toMatchObject({ status: 201, body: { state: 'Pending' } });
    expect(await put({ token: a.token }, o.body.upload_id, one)).toMatchObject({
      status: 200,
      body: { state: 'WaitingForProcessing' },
    });
    expect(await call(s.app, 'GET', `/upload/${o.body.upload_id}`, { token: a.token })).toMatchObject({
      status: 200,
      body: { state: 'WaitingForProcessing' },
    });
    expect(await finalize({ token: a.token }, o.body.upload_id, sha(one))).toMatchObject({
      status: 200,
      body: { state: 'Completed' },
    });
    expect(await quota({ token: a.token })).toMatchObject({ used: 200 });
    expect((await s.deps.quota.report(a.accountId)).blobs).toEqual([
      expect.objectContaining({ contentHash: sha(one), peer: PEER, chargedTo: a.accountId }),
    ]);
    // Again (through another peer): reserved like any fill, since creation says nothing of what is
    // stored, and so within that peer's budget; a merge at finalize, nothing charged.
    const again = await fed({ token: a.token }, one, 'https://other.example');
    expect(again).toMatchObject({ status: 201, body: { state: 'Pending' } });
    expect(await quota({ token: a.token })).toMatchObject({ used: 400, reserved: 200 });
    expect((await put({ token: a.token }, again.body.upload_id, one)).status).toBe(200);
    expect(await finalize({ token: a.token }, again.body.upload_id, sha(one))).toMatchObject({
      status: 200,
      body: { state: 'Merged' },
    });
    expect(await quota({ token: a.token })).toMatchObject({ used: 200, reserved: 0 });
    // Budget: 30 % of 1000 = 300 per peer; 200 cached, so 101 more is over, 100 is not.
    expect(await fed({ token: a.token }, bytes(101, 2))).toMatchObject(problem(403, 'error.quota.federated_budget'));
    const open = await fed({ token: a.token }, bytes(100, 3));
    expect(open.status).toBe(201);
    // The open fill holds its share: another one is over until it is cancelled.
    expect(await fed({ token: a.token }, bytes(1, 4))).toMatchObject(problem(403, 'error.quota.federated_budget'));
    expect(await call(s.app, 'DELETE', `/upload/${open.body.upload_id}`, { token: a.token })).toMatchObject({
      status: 200,
      body: { state: 'Cancelled' },
    });
    expect((await fed({ token: a.token }, bytes(1, 4))).status).toBe(201);
    // Another peer has its own budget.
    expect((await fed({ token: a.token }, bytes(300, 5), 'https://other.example')).status).toBe(201);
    // Bad input.
    expect(
      await upload({ token: a.token }, { kind: 'federated', declared_size: 5, content_hash: sha(bytes(5, 1)) }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(
      await upload(
        { token: a.token },
        { kind: 'federated', source_peer: 'ftp://x', declared_size: 5, content_hash: sha(bytes(5, 1)) },
      ),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(await upload({ token: a.token }, { kind: 'original', source_peer: PEER, declared_size: 5 })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(
      await upload(
        { token: a.token },
        { kind: 'federated', source_peer: PEER, declared_size: 5, content_hash: sha(bytes(5, 1)), device_id: 'tablet' },
      ),
    ).toMatchObject(problem(403, 'error.device.unknown'));
    // Bytes that do not match the announced hash are not kept.
    const wrong = await fed({ token: a.token }, bytes(10, 7), 'https://third.example');
    expect(await put({ token: a.token }, wrong.body.upload_id, bytes(10, 8))).toMatchObject(
      problem(409, 'error.conflict'),
    );
    // Another account cannot touch it.
    const b = await user();
    expect((await call(s.app, 'GET', `/upload/${o.body.upload_id}`, { token: b.token })).status).toBe(404);
  });
});

describe('federated fills: which peer source_peer names', () => {
  const fill = (token: string, peer: unknown, size = 1, seed = 1) =>
    upload(
      { token },
      { kind: 'federated', source_peer: peer, declared_size: size, content_hash: sha(bytes(size, seed)) },
    );

  it('is a listed peer when its URL normalises to one (scheme and host case, a default port, a trailing slash)', async () => {
    const a = await user();
    // Each is https://peer.example: they share its budget (30 % of 1000 = 300).
    expect((await fill(a.token, 'HTTPS://Peer.Example', 150, 40)).status).toBe(201);
    expect((await fill(a.token, 'https://peer.example:443/', 150, 41)).status).toBe(201);
    expect(await fill(a.token, 'https://peer.example', 1, 42)).toMatchObject(
      problem(403, 'error.quota.federated_budget'),
    );
  });

  it('is 403 unknown_peer for any other well-formed http(s) URL, and 400 for what is not one', async () => {
    const a = await user();
    for (const other of [
      'HTTP://stranger.example',
      'https://peer.example:8443',
      'http://peer.example',
      'https://peer.example/v1',
      'https://user@peer.example',
      'https://peer.example?x',
    ]) {
      expect(await fill(a.token, other), other).toMatchObject(problem(403, 'error.federation.unknown_peer'));
    }
    for (const malformed of [
      'https://peer.example:443:80',
      'ftp://peer.example',
      'peer.example',
      'https:peer.example',
      '',
    ]) {
      expect(await fill(a.token, malformed), malformed).toMatchObject(problem(400, 'error.request.invalid'));
    }
    expect(await quota({ token: a.token })).toMatchObject({ used: 0, reserved: 0 });
  });
});

describe('federated fills that run out of time', () => {
  it('read Expired, free their budget, and lose their staged bytes at the sweep', async () => {
    const a = await user();
    const data = bytes(250, 6);
    const o = await upload(
      { token: a.token },
      { kind: 'federated', source_peer: 'https://peer.example', declared_size: 250, content_hash: sha(data) },
    );
    expect(o.status).toBe(201);
    expect((await put({ token: a.token }, o.body.upload_id, data)).status).toBe(200);
    const blobs = s.deps.stores.blobs as unknown as { staged: Map<string, Uint8Array> };
    expect(blobs.staged.has(o.body.upload_id)).toBe(true);
    s.clock.advance(600_000);
    expect(await call(s.app, 'GET', `/upload/${o.body.upload_id}`, { token: a.token })).toMatchObject({
      status: 200,
      body: { state: 'Expired' },
    });
    expect(await finalize({ token: a.token }, o.body.upload_id, sha(data))).toMatchObject(
      problem(409, 'error.conflict'),
    );
    expect((await s.deps.quota.sweep()).expiredUploads).toBe(1);
    expect(blobs.staged.has(o.body.upload_id)).toBe(false);
    expect((await s.deps.quota.sweep()).expiredUploads).toBe(0);
    // Its share of the budget is free again.
    const again = bytes(300, 7);
    expect(
      (
        await upload(
          { token: a.token },
          { kind: 'federated', source_peer: 'https://peer.example', declared_size: 300, content_hash: sha(again) },
        )
      ).status,
    ).toBe(201);
  });
});

describe('X-Svc-Act-As costs nothing without the header', () => {
  it('never reads the sponsorship store on a plain authenticated request', async () => {
    const a = await user();
    let reads = 0;
    const store = s.deps.stores.sponsorship;
    const original = store.findSponsored.bind(store);
    store.findSponsored = async (id: string) => {
      reads++;
      return original(id);
    };
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: a.token })).status).toBe(200);
    expect((await call(s.app, 'GET', '/quota', { token: a.token })).status).toBe(200);
    expect(reads).toBe(0);
    expect((await call(s.app, 'GET', '/quota', as(a.token, a.accountId))).status).toBe(403);
    expect(reads).toBe(1);
  });
});

describe('API reference', () => {
  it('declares every sharing route with its statuses and problem codes', async () => {
    const doc = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
    const op = (path: string, method: string) => JSON.stringify(doc.paths[path]?.[method] ?? null);
    expect(op('/v1/sponsored', 'post')).toContain('error.sponsored.cannot_sponsor');
    expect(op('/v1/sponsored/{id}/owners', 'post')).toContain('error.auth.not_an_owner');
    expect(op('/v1/sponsored/{id}/owners/{owner_id}', 'delete')).toContain('"204"');
    expect(op('/v1/links', 'post')).toContain('error.quota.write_refused');
    expect(op('/v1/links', 'get')).toContain('"200"');
    expect(op('/v1/links/{link_id}', 'get')).not.toContain('bearer');
    expect(op('/v1/links/{link_id}', 'delete')).toContain('"204"');
    expect(op('/v1/links/{link_id}/drops', 'post')).toContain('error.quota.exceeded');
    expect(op('/v1/links/{link_id}/drops', 'get')).toContain('"200"');
    expect(op('/v1/drops/{id}/adopt', 'post')).toContain('"200"');
    expect(op('/v1/drops/{id}', 'delete')).toContain('"204"');
    expect(op('/upload', 'post')).toContain('error.quota.federated_budget');
    expect(doc.paths['/upload/{id}'].put.security).toEqual([{ bearer: [] }, { upload: [] }]);
    expect(doc.paths['/upload/{id}/finalize'].post.security).toEqual([{ bearer: [] }, { upload: [] }]);
    expect(doc.paths['/upload/{id}'].get.security).toEqual([{ bearer: [] }]);
    // Every authenticated route takes X-Svc-Act-As and may answer 403 error.auth.not_an_owner.
    expect(doc.paths['/quota'].get.parameters).toContainEqual({ $ref: '#/components/parameters/X-Svc-Act-As' });
    expect(doc.components.parameters['X-Svc-Act-As']).toMatchObject({
      name: 'X-Svc-Act-As',
      in: 'header',
      required: false,
    });
    expect(JSON.stringify(doc.paths['/quota'].get.responses['403'])).toContain('error.auth.not_an_owner');
    expect(JSON.stringify(doc.paths['/v1/links/{link_id}'].get.parameters)).not.toContain('X-Svc-Act-As');
  });
});
