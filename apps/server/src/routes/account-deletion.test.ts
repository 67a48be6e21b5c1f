import { createHash } from 'node:crypto';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PASSWORD, call, registerUser, testServer, type CallOptions, type TestServer } from '@strongroom/tests';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const KEY = Buffer.from('wrapped keys under the link secret').toString('base64url');
const SEAL = Buffer.from('x25519 public key of the link......').toString('base64url');
const REAUTH_WINDOW_MS = 300_000;

let s: TestServer;
beforeEach(async () => {
  s = await testServer({ SVC_QUOTA_SOFT_BYTES: '100000', SVC_QUOTA_HARD_BYTES: '200000' });
});
afterEach(async () => {
  await s.close();
});

const problem = (status: number, code: string) => ({ status, body: expect.objectContaining({ status, code }) });
const as = (token: string, actAs?: string): CallOptions => ({
  token,
  ...(actAs ? { headers: { 'x-svc-act-as': actAs } } : {}),
});
const guest = (token: string): CallOptions => ({ headers: { authorization: `Upload ${token}` } });

/** A registered account with a published directory listing `phone`. */
async function user() {
  const u = await registerUser(s.app);
  const token = u.access_token;
  const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  expect(
    (await call(s.app, 'PUT', '/v1/devices/directory', { token, raw: raw(dir), contentType: 'application/cbor' }))
      .status,
  ).toBe(200);
  return { ...u, token, accountId };
}
async function album(o: CallOptions): Promise<string> {
  const r = await call(s.app, 'POST', '/v1/albums', { ...o, body: { device_id: 'phone' } });
  expect(r.status).toBe(201);
  return r.body.album_id as string;
}
/** Stores `data` as a finished original (into `albumId` when given); its asset id. */
async function store(o: CallOptions, data: Uint8Array, albumId?: string): Promise<string> {
  const u = await call(s.app, 'POST', '/upload', {
    ...o,
    body: {
      device_id: 'phone',
      kind: 'original',
      declared_size: data.length,
      ...(albumId ? { album_id: albumId } : {}),
    },
  });
  expect(u.status, JSON.stringify(u.body)).toBe(201);
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
  return u.body.upload_id as string;
}
const quota = async (o: CallOptions) => (await call(s.app, 'GET', '/quota', o)).body;

describe('DELETE /v1/auth/account', () => {
  it('ends every way in and everything the account holds; the address registers anew, the handle stays retired, nobody else loses anything', async () => {
    const gone = await user();
    const other = await user();
    expect(
      (await call(s.app, 'PUT', '/v1/discovery/handle', { token: gone.token, body: { user: 'leaver' } })).status,
    ).toBe(200);
    expect(
      (await call(s.app, 'PUT', '/v1/discovery/public', { token: gone.token, body: { published: true } })).status,
    ).toBe(200);
    const handle = (await call(s.app, 'GET', '/v1/auth/profile', { token: gone.token })).body.handle as string;
    const lookup = () =>
      call(s.app, 'GET', `/v1/discovery/lookup?handle=${encodeURIComponent(handle)}`, { token: other.token });
    expect((await lookup()).status).toBe(200);

    // Its library: a blob only it holds, and one the other account stored after it (dedup: charged to it).
    const own = bytes(100, 1);
    const shared = bytes(200, 2);
    const goneAlbum = await album({ token: gone.token });
    const ownAsset = await store({ token: gone.token }, own, goneAlbum);
    await store({ token: gone.token }, shared);
    const othersAsset = await store({ token: other.token }, shared);
    // A share link, an upload link with a guest's drop in flight, an upload of its own in flight.
    const share = await call(s.app, 'POST', '/v1/links', {
      token: gone.token,
      body: { kind: 'share', album_id: goneAlbum, asset_ids: [ownAsset], wrapped_key: KEY },
    });
    expect(share.status).toBe(201);
    const uploadLink = await call(s.app, 'POST', '/v1/links', {
      token: gone.token,
      body: { kind: 'upload', album_id: goneAlbum, seal_key: SEAL },
    });
    expect(uploadLink.status).toBe(201);
    const drop = await call(s.app, 'POST', `/v1/links/${uploadLink.body.link_id}/drops`, {
      body: { declared_size: 30 },
    });
    expect(drop.status).toBe(201);
    expect(
      (
        await call(s.app, 'POST', '/upload', {
          token: gone.token,
          body: { device_id: 'phone', kind: 'original', declared_size: 40 },
        })
      ).status,
    ).toBe(201);
    // A sponsored account it pays for (with a blob of its own), and one of the other account that it co-owns.
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: gone.token })).body.account_id as string;
    await store(as(gone.token, kid), bytes(50, 3));
    const otherKid = (await call(s.app, 'POST', '/v1/sponsored', { token: other.token })).body.account_id as string;
    expect(
      (
        await call(s.app, 'POST', `/v1/sponsored/${otherKid}/owners`, {
          token: other.token,
          body: { account_id: gone.accountId },
        })
      ).status,
    ).toBe(200);

    const before = {
      quota: await quota({ token: other.token }),
      asset: (await call(s.app, 'GET', `/v1/assets/${othersAsset}`, { token: other.token })).body,
      blob: (await call(s.app, 'GET', `/v1/blobs/${sha(shared)}`, { token: other.token })).status,
      sponsored: await call(s.app, 'GET', '/v1/sponsored', { token: other.token }),
    };

    expect((await call(s.app, 'DELETE', '/v1/auth/account', { token: gone.token })).status).toBe(204);

    // Every token and way in of the account is refused.
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: gone.token })).status).toBe(401);
    expect((await call(s.app, 'DELETE', '/v1/auth/account', { token: gone.token })).status).toBe(401);
    expect(
      (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: gone.session_token } })).status,
    ).toBe(401);
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: gone.address, password: PASSWORD } })).status,
    ).toBe(401);
    // Its links are gone, and so is the guest's drop.
    expect(await call(s.app, 'GET', `/v1/links/${share.body.link_id}`, {})).toMatchObject(
      problem(404, 'error.not_found'),
    );
    expect(await call(s.app, 'GET', `/v1/links/${uploadLink.body.link_id}`, {})).toMatchObject(
      problem(404, 'error.not_found'),
    );
    expect(
      (
        await call(s.app, 'PUT', `/upload/${drop.body.upload_id}`, {
          ...guest(drop.body.upload_token),
          raw: raw(bytes(30, 4)),
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBe(401);
    // Its handle is retired: unpublished, and nobody may claim it.
    expect(await lookup()).toMatchObject(problem(404, 'error.not_found'));
    expect(
      await call(s.app, 'PUT', '/v1/discovery/handle', { token: other.token, body: { user: 'leaver' } }),
    ).toMatchObject(problem(409, 'error.discovery.handle_taken'));
    // Its sponsored account is gone; the co-ownership is removed.
    expect(await call(s.app, 'GET', '/v1/auth/profile', as(other.token, kid))).toMatchObject(
      problem(403, 'error.auth.not_an_owner'),
    );
    const sponsored = await call(s.app, 'GET', '/v1/sponsored', { token: other.token });
    expect(sponsored.body.sponsored).toEqual([
      expect.objectContaining({ account_id: otherKid, owners: [other.accountId] }),
    ]);
    expect(before.sponsored.body.sponsored).toEqual([
      expect.objectContaining({ account_id: otherKid, owners: [other.accountId, gone.accountId] }),
    ]);

    // The other account reads and pays exactly as before.
    expect(await quota({ token: other.token })).toEqual(before.quota);
    expect((await call(s.app, 'GET', `/v1/assets/${othersAsset}`, { token: other.token })).body).toEqual(before.asset);
    expect(before.asset).toMatchObject({ asset_id: othersAsset });
    expect((await call(s.app, 'GET', `/v1/blobs/${sha(shared)}`, { token: other.token })).status).toBe(before.blob);

    // The sweep credits exactly the deleted account's charges that nobody else references.
    const swept = await s.deps.quota.sweep();
    expect(swept.credited).toEqual({ [gone.accountId]: 100 + 50 });
    expect(await quota({ token: other.token })).toEqual(before.quota);
    expect((await call(s.app, 'GET', `/v1/blobs/${sha(shared)}`, { token: other.token })).status).toBe(200);

    // The address registers again: a new account with a new id and nothing of the old one.
    const again = await call(s.app, 'POST', '/v1/auth/register', {
      body: { address: gone.address, password: PASSWORD },
    });
    expect(again.status).toBe(200);
    const profile = (await call(s.app, 'GET', '/v1/auth/profile', { token: again.body.access_token })).body;
    expect(profile).toMatchObject({ address: gone.address, handle: null });
    expect(profile.account_id).not.toBe(gone.accountId);
    expect(await quota({ token: again.body.access_token })).toMatchObject({ used: 0, reserved: 0 });
    expect((await call(s.app, 'GET', `/v1/assets/${ownAsset}`, { token: again.body.access_token })).status).toBe(404);
  });

  it('a stale session is refused (403) and nothing is deleted', async () => {
    const u = await user();
    const asset = await store({ token: u.token }, bytes(10, 7));
    s.clock.advance(REAUTH_WINDOW_MS + 1);
    const access = (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } })).body
      .access_token as string;
    expect(await call(s.app, 'DELETE', '/v1/auth/account', { token: access })).toMatchObject(
      problem(403, 'error.auth.reauthentication_required'),
    );
    expect((await call(s.app, 'GET', `/v1/assets/${asset}`, { token: access })).status).toBe(200);
    expect(
      (await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } })).status,
    ).toBe(200);
  });

  it('acting as a sponsored account, its sponsor deletes it; a co-owner is refused; the sponsor keeps its own account', async () => {
    const sponsor = await user();
    const coOwner = await user();
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: sponsor.token })).body.account_id as string;
    expect(
      (
        await call(s.app, 'POST', `/v1/sponsored/${kid}/owners`, {
          token: sponsor.token,
          body: { account_id: coOwner.accountId },
        })
      ).status,
    ).toBe(200);
    const kidAsset = await store(as(sponsor.token, kid), bytes(60, 8));
    expect(await call(s.app, 'DELETE', '/v1/auth/account', as(coOwner.token, kid))).toMatchObject(
      problem(403, 'error.auth.not_an_owner'),
    );
    // A stranger acting as it, and a guest's upload token, are refused before anything is read.
    const stranger = await user();
    expect(await call(s.app, 'DELETE', '/v1/auth/account', as(stranger.token, kid))).toMatchObject(
      problem(403, 'error.auth.not_an_owner'),
    );
    const link = await call(s.app, 'POST', '/v1/links', {
      token: sponsor.token,
      body: { kind: 'upload', album_id: await album({ token: sponsor.token }), seal_key: SEAL },
    });
    const drop = await call(s.app, 'POST', `/v1/links/${link.body.link_id}/drops`, { body: { declared_size: 5 } });
    expect((await call(s.app, 'DELETE', '/v1/auth/account', guest(drop.body.upload_token))).status).toBe(401);
    expect((await call(s.app, 'DELETE', '/v1/auth/account', {})).status).toBe(401);
    expect((await call(s.app, 'GET', `/v1/assets/${kidAsset}`, as(coOwner.token, kid))).status).toBe(200);
    expect((await call(s.app, 'DELETE', '/v1/auth/account', as(sponsor.token, kid))).status).toBe(204);
    expect(await call(s.app, 'GET', '/v1/auth/profile', as(sponsor.token, kid))).toMatchObject(
      problem(403, 'error.auth.not_an_owner'),
    );
    expect(await call(s.app, 'GET', '/v1/auth/profile', as(coOwner.token, kid))).toMatchObject(
      problem(403, 'error.auth.not_an_owner'),
    );
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: sponsor.token })).status).toBe(200);
    expect((await call(s.app, 'GET', '/v1/sponsored', { token: sponsor.token })).body.sponsored).toEqual([]);
    expect((await s.deps.quota.sweep()).credited).toEqual({ [sponsor.accountId]: 60 });
  });
});
