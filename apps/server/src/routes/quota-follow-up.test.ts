import { createHash } from 'node:crypto';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, type CallOptions, type TestServer } from '@strongroom/tests';

/**
 * Spec §9.6: in HardExceeded and GraceExpired the provenance and metadata writes a delete, a
 * restore or a trash-empty produces are always admitted. The client writes them (end-to-end
 * encryption), so the server admits a provenance or metadata upload, or a metadata edit, as a
 * follow-up when the account trashed, restored, purged or emptied its trash within
 * SVC_QUOTA_FOLLOW_UP_S, past the hard limit by at most SVC_QUOTA_FOLLOW_UP_OVERDRAFT_BYTES.
 */

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const HARD = 1000;
const OVERDRAFT = 50;
const WINDOW_S = 120;
const GRACE_S = 300; // the clock moves under the access token's 15 minutes in every test
let s: TestServer;
beforeAll(async () => {
  s = await testServer({
    SVC_QUOTA_SOFT_BYTES: '',
    SVC_QUOTA_HARD_BYTES: String(HARD),
    SVC_QUOTA_GRACE_S: String(GRACE_S),
    SVC_QUOTA_FOLLOW_UP_S: String(WINDOW_S),
    SVC_QUOTA_FOLLOW_UP_OVERDRAFT_BYTES: String(OVERDRAFT),
    SVC_UPLOAD_TTL_S: '3600',
  });
});
afterAll(async () => {
  await s.close();
});

const problem = (status: number, code: string) => ({ status, body: expect.objectContaining({ status, code }) });

/** A registered account with a published device directory listing `phone`. */
async function user(): Promise<CallOptions & { token: string; accountId: string }> {
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
const open = (who: CallOptions, kind: string, declared: number) =>
  call(s.app, 'POST', '/upload', { ...who, body: { device_id: 'phone', kind, declared_size: declared } });
const quota = async (who: CallOptions) => (await call(s.app, 'GET', '/quota', { token: who.token })).body;
const meta = (who: CallOptions, asset: string, data: Uint8Array) =>
  call(s.app, 'PUT', `/v1/assets/${asset}/metadata`, {
    ...who,
    raw: raw(data),
    contentType: 'application/octet-stream',
  });

/** create + PUT + finalize an original; returns the asset id. */
async function store(who: CallOptions, data: Uint8Array): Promise<string> {
  const o = await open(who, 'original', data.length);
  expect(o.status).toBe(201);
  expect(
    (
      await call(s.app, 'PUT', `/upload/${o.body.upload_id}`, {
        ...who,
        raw: raw(data),
        contentType: 'application/octet-stream',
      })
    ).status,
  ).toBe(200);
  const f = await call(s.app, 'POST', `/upload/${o.body.upload_id}/finalize`, {
    ...who,
    body: { content_hash: sha(data) },
  });
  expect(f.status).toBe(200);
  return f.body.asset_id;
}

/** A follow-up blob sent and finalized into `asset` (in the library or in the trash). */
async function attach(who: CallOptions, uploadId: string, asset: string, data: Uint8Array): Promise<void> {
  expect(
    (
      await call(s.app, 'PUT', `/upload/${uploadId}`, {
        ...who,
        raw: raw(data),
        contentType: 'application/octet-stream',
      })
    ).status,
  ).toBe(200);
  const f = await call(s.app, 'POST', `/upload/${uploadId}/finalize`, {
    ...who,
    body: { content_hash: sha(data), manifest: { asset_id: asset } },
  });
  expect(f).toMatchObject({ status: 200, body: { state: 'Completed', asset_id: asset } });
}

describe('follow-up writes of a delete, a restore or a trash-empty (spec §9.6)', () => {
  it('HardExceeded: trash, then a provenance upload is admitted (201) within the overdraft; without a prior delete, past the overdraft or after the window, 403', async () => {
    const a = await user();
    const x = await store(a, bytes(HARD, 1));
    expect(await quota(a)).toMatchObject({ used: HARD, state: 'HardExceeded' });
    // No delete yet: a provenance upload is an upload like any other.
    expect(await open(a, 'provenance', 10)).toMatchObject(problem(403, 'error.quota.exceeded'));
    expect(await call(s.app, 'POST', `/v1/assets/${x}/trash`, a)).toMatchObject({
      status: 200,
      body: { state: 'trashed' },
    });
    const prov = await open(a, 'provenance', 10);
    expect(prov).toMatchObject({ status: 201, body: { state: 'Pending' } });
    await attach(a, prov.body.upload_id, x, bytes(10, 2));
    const metaSession = await open(a, 'metadata', OVERDRAFT - 10);
    expect(metaSession).toMatchObject({ status: 201 });
    expect(await quota(a)).toMatchObject({ used: HARD + OVERDRAFT, state: 'HardExceeded' });
    // The overdraft is a line on used: not one byte past it, and other kinds never pass the hard limit.
    expect(await open(a, 'provenance', 1)).toMatchObject(problem(403, 'error.quota.exceeded'));
    expect(await open(a, 'original', 1)).toMatchObject(problem(403, 'error.quota.exceeded'));
    expect(await open(a, 'derivative', 1)).toMatchObject(problem(403, 'error.quota.exceeded'));
    // Restore and trash again: the line does not move.
    expect((await call(s.app, 'POST', `/v1/assets/${x}/restore`, a)).status).toBe(200);
    expect((await call(s.app, 'POST', `/v1/assets/${x}/trash`, a)).status).toBe(200);
    expect(await open(a, 'provenance', 1)).toMatchObject(problem(403, 'error.quota.exceeded'));
    // Outside the window the normal rule applies again, even with room under the line.
    s.clock.advance(WINDOW_S * 1000 + 1);
    expect((await call(s.app, 'DELETE', `/upload/${metaSession.body.upload_id}`, a)).status).toBe(200);
    expect(await quota(a)).toMatchObject({ used: HARD + 10 });
    expect(await open(a, 'provenance', 10)).toMatchObject(problem(403, 'error.quota.exceeded'));
  });

  it('GraceExpired: trash then provenance 201, restore then a growing metadata edit 200; without a prior delete, past the overdraft or after the window, 403', async () => {
    const b = await user();
    const y = await store(b, bytes(900, 3));
    const z = await store(b, bytes(100, 4));
    s.clock.advance(GRACE_S * 1000 + 1);
    expect(await quota(b)).toMatchObject({ used: HARD, state: 'GraceExpired' });
    expect(await open(b, 'provenance', 10)).toMatchObject(problem(403, 'error.quota.exceeded'));
    expect(await meta(b, z, bytes(20, 5))).toMatchObject(problem(403, 'error.quota.write_refused'));
    expect((await call(s.app, 'POST', `/v1/assets/${y}/trash`, b)).status).toBe(200);
    const prov = await open(b, 'provenance', 10);
    expect(prov).toMatchObject({ status: 201 });
    await attach(b, prov.body.upload_id, y, bytes(10, 6));
    expect((await call(s.app, 'POST', `/v1/assets/${y}/restore`, b)).status).toBe(200);
    expect(await meta(b, y, bytes(20, 7))).toMatchObject({ status: 200, body: { state: 'live' } });
    expect(await quota(b)).toMatchObject({ used: HARD + 30, state: 'GraceExpired' });
    // 1030 + 21 passes the line (1050); 1030 + 20 reaches it.
    expect(await meta(b, z, bytes(21, 8))).toMatchObject(problem(403, 'error.quota.write_refused'));
    expect(await meta(b, z, bytes(20, 9))).toMatchObject({ status: 200 });
    expect(await quota(b)).toMatchObject({ used: HARD + OVERDRAFT });
    // A shrinking edit is admitted in any case; growth after the window is not.
    expect(await meta(b, z, bytes(5, 10))).toMatchObject({ status: 200 });
    s.clock.advance(WINDOW_S * 1000 + 1);
    expect(await meta(b, z, bytes(6, 11))).toMatchObject(problem(403, 'error.quota.write_refused'));
    expect(await open(b, 'provenance', 1)).toMatchObject(problem(403, 'error.quota.exceeded'));
  });

  it('a trash-empty counts too (an empty one does not); Suspended refuses follow-ups as it refuses every upload', async () => {
    const c = await user();
    const x = await store(c, bytes(600, 12));
    const w = await store(c, bytes(400, 13));
    expect((await call(s.app, 'POST', `/v1/assets/${x}/trash`, c)).status).toBe(200);
    s.clock.advance(WINDOW_S * 1000 + 1);
    expect(await open(c, 'provenance', 10)).toMatchObject(problem(403, 'error.quota.exceeded'));
    expect(await call(s.app, 'POST', '/v1/trash/empty', c)).toMatchObject({ status: 200, body: { purged: 1 } });
    expect((await open(c, 'provenance', 10)).status).toBe(201);
    // An empty trash emptied again is no change, and no new evidence.
    s.clock.advance(WINDOW_S * 1000 + 1);
    expect(await call(s.app, 'POST', '/v1/trash/empty', c)).toMatchObject({ status: 200, body: { purged: 0 } });
    expect(await open(c, 'provenance', 10)).toMatchObject(problem(403, 'error.quota.exceeded'));
    await s.deps.quota.suspend(c.accountId);
    expect((await call(s.app, 'POST', `/v1/assets/${w}/trash`, c)).status).toBe(200);
    expect(await open(c, 'provenance', 1)).toMatchObject(problem(403, 'error.quota.write_refused'));
    await s.deps.quota.unsuspend(c.accountId);
    expect((await open(c, 'provenance', 1)).status).toBe(201);
  });

  it("a sponsored account's own delete admits its follow-ups on its sponsor's quota; the sponsor's do not pass for it", async () => {
    const sponsor = await user();
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: sponsor.token })).body.account_id as string;
    const asKid: CallOptions = { token: sponsor.token, headers: { 'x-svc-act-as': kid } };
    await store(sponsor, bytes(900, 15));
    const k = await store(asKid, bytes(100, 16));
    expect(await quota(sponsor)).toMatchObject({ used: HARD, state: 'HardExceeded' });
    expect((await call(s.app, 'POST', `/v1/assets/${k}/trash`, asKid)).status).toBe(200);
    expect(await open(sponsor, 'provenance', 10)).toMatchObject(problem(403, 'error.quota.exceeded'));
    expect((await open(asKid, 'provenance', 10)).status).toBe(201);
    expect(await quota(sponsor)).toMatchObject({ used: HARD + 10 });
  });

  it('a growing follow-up edit is judged on the bytes it charges now, not on new minus old', async () => {
    const a = await user();
    const y = await store(a, bytes(900, 1));
    const z = await store(a, bytes(52, 2));
    // The line is on `used`, and an edit charges its new blob whole now (the old one is credited
    // only by the next sweep), so the line judges what the edit adds to `used`, not new minus old.
    // HardExceeded admits metadata edits: z takes a 48-byte metadata blob (used 1000).
    expect((await meta(a, z, bytes(48, 3))).status).toBe(200);
    expect((await quota(a)).used).toBe(HARD);
    s.clock.advance(GRACE_S * 1000 + 1);
    expect((await call(s.app, 'POST', `/v1/assets/${y}/trash`, a)).status).toBe(200);
    // 49 bytes for the old 48: +1 "growth" (1001 <= 1050), yet used gains 49 now (the 48 are
    // credited only by the sweep): 1049. The next, 50 for 49, is +1 again (1050 <= 1050) and
    // would charge 50 more: 1099, past the line, and is refused.
    expect((await meta(a, z, bytes(49, 4))).status).toBe(200);
    expect((await quota(a)).used).toBe(HARD + 49);
    expect(await meta(a, z, bytes(50, 5))).toMatchObject({
      status: 403,
      body: expect.objectContaining({ code: 'error.quota.write_refused' }),
    });
    expect((await quota(a)).used).toBe(HARD + 49);
    // An edit whose new blob reaches the line exactly is admitted.
    expect((await meta(a, z, bytes(1, 6))).status).toBe(200);
    expect((await quota(a)).used).toBe(HARD + OVERDRAFT);
  });
});
