import { createHash } from 'node:crypto';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, type TestServer } from '@strongroom/tests';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);
/** Node's fetch takes bytes; the DOM typings disagree. */
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const GRACE_S = 600; // under the access token's 15 minutes
let s: TestServer;
beforeEach(async () => {
  s = await testServer({
    SVC_QUOTA_SOFT_BYTES: '600',
    SVC_QUOTA_HARD_BYTES: '1000',
    SVC_QUOTA_GRACE_S: String(GRACE_S),
    SVC_UPLOAD_TTL_S: '600',
  });
});
afterEach(async () => {
  await s.close();
});

const problem = (status: number, code: string) => ({ status, body: expect.objectContaining({ status, code }) });

/** A registered account with a published device directory listing `phone`. */
async function user() {
  const u = await registerUser(s.app);
  const token = u.access_token;
  const profile = await call(s.app, 'GET', '/v1/auth/profile', { token });
  const accountId = profile.body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  const put = await call(s.app, 'PUT', '/v1/devices/directory', {
    token,
    raw: raw(dir),
    contentType: 'application/cbor',
  });
  if (put.status >= 300) throw new Error(`directory: ${put.status} ${JSON.stringify(put.body)}`);
  return { token, accountId };
}
const open = (token: string, body: Record<string, unknown>) =>
  call(s.app, 'POST', '/upload', { token, body: { device_id: 'phone', kind: 'original', ...body } });
const put = (token: string, id: string, data: Uint8Array) =>
  call(s.app, 'PUT', `/upload/${id}`, { token, raw: raw(data), contentType: 'application/octet-stream' });
const finalize = (token: string, id: string, body: Record<string, unknown>) =>
  call(s.app, 'POST', `/upload/${id}/finalize`, { token, body });
const quota = async (token: string) => (await call(s.app, 'GET', '/quota', { token })).body;

/** create + PUT + finalize; returns the asset id. */
async function store(token: string, data: Uint8Array): Promise<string> {
  const o = await open(token, { declared_size: data.length });
  expect(o.status).toBe(201);
  expect((await put(token, o.body.upload_id, data)).status).toBe(200);
  const f = await finalize(token, o.body.upload_id, { content_hash: sha(data) });
  expect(f.status).toBe(200);
  return f.body.asset_id;
}

describe('GET /quota', () => {
  it('shows usage, limits, state and alerts', async () => {
    const { token } = await user();
    expect(await call(s.app, 'GET', '/quota', { token })).toMatchObject({
      status: 200,
      body: {
        used: 0,
        reserved: 0,
        soft_limit: 600,
        hard_limit: 1000,
        state: 'OK',
        grace_expires_at: null,
        alerts: [],
      },
    });
    expect((await call(s.app, 'GET', '/quota', {})).status).toBe(401);
  });
});

describe('upload sessions', () => {
  it('reserves at creation, charges the real size at finalize, merges stored bytes for nothing at finalize', async () => {
    const a = await user();
    const o = await open(a.token, { declared_size: 300 });
    expect(o).toMatchObject({
      status: 201,
      body: { upload_id: expect.any(String), state: 'Pending', expires_at: expect.any(String) },
    });
    // direct_put and multipart are null: this store cannot take bytes from clients directly
    // (system-tests/blobs/blob-direct.test.ts and blob-multipart.test.ts: S3).
    expect(Object.keys(o.body).sort()).toEqual(['direct_put', 'expires_at', 'multipart', 'state', 'upload_id']);
    expect(o.body.direct_put).toBeNull();
    expect(o.body.multipart).toBeNull();
    expect(await quota(a.token)).toMatchObject({ used: 300, reserved: 300 });
    const data = bytes(250, 1);
    expect(await put(a.token, o.body.upload_id, data)).toMatchObject({
      status: 200,
      body: { state: 'WaitingForProcessing' },
    });
    const f = await finalize(a.token, o.body.upload_id, { content_hash: sha(data) });
    expect(f).toMatchObject({ status: 200, body: { state: 'Completed', asset_id: o.body.upload_id } });
    expect(await quota(a.token)).toMatchObject({ used: 250, reserved: 0 });
    // Another account announcing the same hash learns nothing: the answer is the one an unknown hash
    // gets (Pending, reserved), and without the bytes there is no merge (spec §10.4).
    const b = await user();
    const m = await open(b.token, { declared_size: 250, content_hash: sha(data) });
    const unknown = await open(b.token, { declared_size: 250, content_hash: sha(bytes(250, 99)) });
    expect(m).toMatchObject({ status: 201, body: { state: 'Pending' } });
    expect(unknown).toMatchObject({ status: 201, body: { state: 'Pending' } });
    expect(Object.keys(m.body).sort()).toEqual(Object.keys(unknown.body).sort());
    expect(await quota(b.token)).toMatchObject({ used: 500, reserved: 500 });
    expect(await call(s.app, 'DELETE', `/upload/${unknown.body.upload_id}`, { token: b.token })).toMatchObject({
      status: 200,
    });
    expect(await finalize(b.token, m.body.upload_id, { content_hash: sha(data) })).toMatchObject(
      problem(409, 'error.conflict'),
    );
    // Bytes that are not the announced ones are not kept.
    expect(await put(b.token, m.body.upload_id, bytes(250, 98))).toMatchObject(problem(409, 'error.conflict'));
    // With the bytes: a merge at finalize, the reservation released, nothing charged.
    expect((await put(b.token, m.body.upload_id, data)).status).toBe(200);
    expect(await finalize(b.token, m.body.upload_id, { content_hash: sha(data) })).toMatchObject({
      status: 200,
      body: { state: 'Merged' },
    });
    expect(await quota(b.token)).toMatchObject({ used: 0, reserved: 0 });
    const asset = await call(s.app, 'GET', `/v1/assets/${m.body.upload_id}`, { token: b.token });
    expect(asset.body).toMatchObject({
      owner_id: b.accountId,
      upload_user_id: b.accountId,
      state: 'live',
      blobs: [{ kind: 'original', content_hash: sha(data), size: 250 }],
    });
    // A derivative names its asset in the manifest and is charged too.
    const d = await open(a.token, { declared_size: 40, kind: 'derivative' });
    await put(a.token, d.body.upload_id, bytes(40, 2));
    expect(await finalize(a.token, d.body.upload_id, { content_hash: sha(bytes(40, 2)) })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(
      await finalize(a.token, d.body.upload_id, {
        content_hash: sha(bytes(40, 2)),
        manifest: { asset_id: o.body.upload_id },
      }),
    ).toMatchObject({ status: 200, body: { state: 'Completed' } });
    expect(await quota(a.token)).toMatchObject({ used: 290 });
  });

  it('cancel and expiry release the reservation', async () => {
    const { token } = await user();
    const o = await open(token, { declared_size: 500 });
    expect(await call(s.app, 'DELETE', `/upload/${o.body.upload_id}`, { token })).toMatchObject({
      status: 200,
      body: { state: 'Cancelled' },
    });
    expect(await quota(token)).toMatchObject({ used: 0 });
    expect(await call(s.app, 'DELETE', `/upload/${o.body.upload_id}`, { token })).toMatchObject(
      problem(409, 'error.conflict'),
    );
    const e = await open(token, { declared_size: 500 });
    s.clock.advance(600_000);
    expect(await quota(token)).toMatchObject({ used: 0, reserved: 0 });
    expect((await call(s.app, 'GET', `/upload/${e.body.upload_id}`, { token })).body.state).toBe('Expired');
    expect(await put(token, e.body.upload_id, bytes(1, 1))).toMatchObject(problem(409, 'error.conflict'));
  });

  it('refuses a creation that would cross the hard limit with 403 and writes no row', async () => {
    const { token } = await user();
    await open(token, { declared_size: 900 });
    expect(await open(token, { declared_size: 101 })).toMatchObject(problem(403, 'error.quota.exceeded'));
    expect(await quota(token)).toMatchObject({ used: 900, reserved: 900 });
    expect((await open(token, { declared_size: 100 })).status).toBe(201);
  });

  it('refuses bytes beyond the declared size (413, nothing kept), PUT after finalize or cancel (409), a wrong hash (409)', async () => {
    const { token } = await user();
    const o = await open(token, { declared_size: 10 });
    expect(await put(token, o.body.upload_id, bytes(11, 3))).toMatchObject(problem(413, 'error.upload.too_large'));
    expect((await call(s.app, 'GET', `/upload/${o.body.upload_id}`, { token })).body.state).toBe('Pending');
    expect(await finalize(token, o.body.upload_id, { content_hash: sha(bytes(11, 3)) })).toMatchObject(
      problem(409, 'error.conflict'),
    );
    await put(token, o.body.upload_id, bytes(10, 3));
    expect(await finalize(token, o.body.upload_id, { content_hash: sha(bytes(10, 4)) })).toMatchObject(
      problem(409, 'error.conflict'),
    );
    expect((await finalize(token, o.body.upload_id, { content_hash: sha(bytes(10, 3)) })).status).toBe(200);
    expect(await put(token, o.body.upload_id, bytes(10, 3))).toMatchObject(problem(409, 'error.conflict'));
    // Finalize is idempotent: the same hash again answers the session as it stands, and charges nothing more.
    expect(await finalize(token, o.body.upload_id, { content_hash: sha(bytes(10, 3)) })).toMatchObject({
      status: 200,
      body: { state: 'Completed' },
    });
    expect(await quota(token)).toMatchObject({ used: 10, reserved: 0 });
    expect(await finalize(token, o.body.upload_id, { content_hash: sha(bytes(10, 4)) })).toMatchObject(
      problem(409, 'error.conflict'),
    );
    expect(await call(s.app, 'PUT', `/upload/${o.body.upload_id}`, { token, body: { x: 1 } })).toMatchObject(
      problem(415, 'error.request.unsupported_media_type'),
    );
  });

  it("validates the request and the device; another account's session is 404", async () => {
    const a = await user();
    for (const body of [
      { declared_size: 0 },
      { declared_size: 1.5 },
      { declared_size: 2 ** 53 },
      { declared_size: 5, kind: 'thumbnail' },
      { declared_size: 5, content_hash: 'ABC' },
      { declared_size: 5, extra: true },
    ]) {
      expect(await open(a.token, body)).toMatchObject(problem(400, 'error.request.invalid'));
    }
    expect(await open(a.token, { declared_size: 5, device_id: 'stranger' })).toMatchObject(
      problem(403, 'error.device.unknown'),
    );
    expect(await quota(a.token)).toMatchObject({ used: 0 });
    const o = await open(a.token, { declared_size: 5 });
    const b = await user();
    expect(await put(b.token, o.body.upload_id, bytes(5, 1))).toMatchObject(problem(404, 'error.not_found'));
    expect(await call(s.app, 'DELETE', `/upload/${o.body.upload_id}`, { token: b.token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
  });
});

describe('quota states over HTTP', () => {
  it('OK -> SoftWarning -> HardExceeded -> GraceExpired, and lifted when space is freed by the sweep', async () => {
    const { token } = await user();
    const first = await store(token, bytes(500, 1));
    expect(await quota(token)).toMatchObject({ state: 'OK', alerts: [] });
    await store(token, bytes(100, 2));
    expect(await quota(token)).toMatchObject({ used: 600, state: 'SoftWarning', alerts: ['quota_soft'] });
    const third = await store(token, bytes(400, 3));
    const hard = await quota(token);
    expect(hard).toMatchObject({ used: 1000, state: 'HardExceeded', alerts: ['quota_soft', 'quota_grace_expiring'] });
    expect(Date.parse(hard.grace_expires_at)).toBe(s.clock.now() + GRACE_S * 1000);
    // HardExceeded: new sessions refused; metadata edits and every other write work.
    expect(await open(token, { declared_size: 1 })).toMatchObject(problem(403, 'error.quota.exceeded'));
    const meta = (n: number, f: number) =>
      call(s.app, 'PUT', `/v1/assets/${first}/metadata`, {
        token,
        raw: raw(bytes(n, f)),
        contentType: 'application/octet-stream',
      });
    expect((await meta(20, 9)).status).toBe(200);
    s.clock.advance(GRACE_S * 1000 + 1);
    expect(await quota(token)).toMatchObject({ state: 'GraceExpired', alerts: ['quota_soft'] });
    // GraceExpired: metadata growth refused; shrinking edits, trash, restore, purge always admitted.
    expect(await meta(30, 8)).toMatchObject(problem(403, 'error.quota.write_refused'));
    expect((await meta(10, 7)).status).toBe(200);
    expect(await call(s.app, 'POST', `/v1/assets/${third}/trash`, { token })).toMatchObject({
      status: 200,
      body: { state: 'trashed' },
    });
    expect((await call(s.app, 'POST', `/v1/assets/${third}/restore`, { token })).status).toBe(200);
    await call(s.app, 'POST', `/v1/assets/${third}/trash`, { token });
    expect((await quota(token)).state).toBe('GraceExpired'); // trash still counts
    expect(await call(s.app, 'DELETE', `/v1/assets/${third}`, { token })).toMatchObject({ status: 204 });
    expect((await quota(token)).state).toBe('GraceExpired'); // nothing credited before the sweep
    const swept = await s.deps.quota.sweep();
    expect(swept.credited).toEqual({
      [(await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id]: 400 + 20,
    });
    expect(await quota(token)).toMatchObject({ used: 610, state: 'SoftWarning', grace_expires_at: null });
  });

  it('trash-empty purges the trash; a live asset cannot be purged', async () => {
    const { token } = await user();
    const a = await store(token, bytes(50, 1));
    expect(await call(s.app, 'DELETE', `/v1/assets/${a}`, { token })).toMatchObject(problem(409, 'error.conflict'));
    await call(s.app, 'POST', `/v1/assets/${a}/trash`, { token });
    expect(await call(s.app, 'POST', '/v1/trash/empty', { token })).toMatchObject({ status: 200, body: { purged: 1 } });
    expect(await quota(token)).toMatchObject({ used: 50 });
    await s.deps.quota.sweep();
    expect(await quota(token)).toMatchObject({ used: 0 });
  });

  it('Suspended refuses uploads and metadata growth, admits deletes; unsuspend lifts it', async () => {
    const a = await user();
    const asset = await store(a.token, bytes(10, 1));
    await s.deps.quota.suspend(a.accountId);
    expect(await quota(a.token)).toMatchObject({ state: 'Suspended' });
    expect(await open(a.token, { declared_size: 1 })).toMatchObject(problem(403, 'error.quota.write_refused'));
    expect(
      await call(s.app, 'PUT', `/v1/assets/${asset}/metadata`, {
        token: a.token,
        raw: raw(bytes(5, 1)),
        contentType: 'application/octet-stream',
      }),
    ).toMatchObject(problem(403, 'error.quota.write_refused'));
    expect((await call(s.app, 'POST', `/v1/assets/${asset}/trash`, { token: a.token })).status).toBe(200);
    await s.deps.quota.unsuspend(a.accountId);
    expect((await open(a.token, { declared_size: 1 })).status).toBe(201);
  });

  it('many concurrent creations for one account never exceed the hard limit', async () => {
    const { token } = await user();
    const results = await Promise.all(Array.from({ length: 50 }, () => open(token, { declared_size: 30 })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(33);
    expect(results.filter((r) => r.status === 403).every((r) => r.body.code === 'error.quota.exceeded')).toBe(true);
    expect(await quota(token)).toMatchObject({ used: 990, reserved: 990 });
  });
});
