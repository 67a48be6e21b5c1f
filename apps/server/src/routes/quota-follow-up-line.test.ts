import { createHash } from 'node:crypto';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, type CallOptions, type TestServer } from '@strongroom/tests';

/**
 * The follow-up overdraft is a line on `used` (quota/machine.ts admitWrite): a follow-up metadata
 * edit must not take `used` past hard + overdraft. An edit charges its new blob in full now (the old
 * one is credited only by the next sweep), so the line is judged on what the edit adds to `used`.
 */

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const HARD = 1000;
const OVERDRAFT = 50;
const WINDOW_S = 120;
const GRACE_S = 300;
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

async function user(): Promise<CallOptions & { token: string; accountId: string }> {
  const u = await registerUser(s.app);
  const token = u.access_token;
  const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  const put = await call(s.app, 'PUT', '/v1/devices/directory', { token, raw: raw(dir), contentType: 'application/cbor' });
  if (put.status >= 300) throw new Error(`directory: ${put.status} ${JSON.stringify(put.body)}`);
  return { token, accountId };
}
const open = (who: CallOptions, kind: string, declared: number) => call(s.app, 'POST', '/upload', { ...who, body: { device_id: 'phone', kind, declared_size: declared } });
const used = async (who: CallOptions) => (await call(s.app, 'GET', '/quota', { token: who.token })).body.used as number;
const meta = (who: CallOptions, asset: string, data: Uint8Array) => call(s.app, 'PUT', `/v1/assets/${asset}/metadata`, { ...who, raw: raw(data), contentType: 'application/octet-stream' });
async function store(who: CallOptions, data: Uint8Array): Promise<string> {
  const o = await open(who, 'original', data.length);
  expect(o.status).toBe(201);
  expect((await call(s.app, 'PUT', `/upload/${o.body.upload_id}`, { ...who, raw: raw(data), contentType: 'application/octet-stream' })).status).toBe(200);
  const f = await call(s.app, 'POST', `/upload/${o.body.upload_id}/finalize`, { ...who, body: { content_hash: sha(data) } });
  expect(f.status).toBe(200);
  return f.body.asset_id;
}

describe('the follow-up line on used holds for metadata edits', () => {
  it('a growing follow-up edit is judged on the bytes it charges now, not on new minus old', async () => {
    const a = await user();
    const y = await store(a, bytes(900, 1));
    const z = await store(a, bytes(52, 2));
    // HardExceeded admits metadata edits: z takes a 48-byte metadata blob (used 1000).
    expect((await meta(a, z, bytes(48, 3))).status).toBe(200);
    expect(await used(a)).toBe(HARD);
    s.clock.advance(GRACE_S * 1000 + 1);
    expect((await call(s.app, 'POST', `/v1/assets/${y}/trash`, a)).status).toBe(200);
    // 49 bytes for the old 48: +1 "growth" (1001 <= 1050), yet used gains 49 now (the 48 are
    // credited only by the sweep): 1049. The next, 50 for 49, is +1 again (1050 <= 1050) and
    // would charge 50 more: 1099, past the line, and is refused.
    expect((await meta(a, z, bytes(49, 4))).status).toBe(200);
    expect(await used(a)).toBe(HARD + 49);
    expect(await meta(a, z, bytes(50, 5))).toMatchObject({ status: 403, body: expect.objectContaining({ code: 'error.quota.write_refused' }) });
    expect(await used(a)).toBe(HARD + 49);
    // An edit whose new blob reaches the line exactly is admitted.
    expect((await meta(a, z, bytes(1, 6))).status).toBe(200);
    expect(await used(a)).toBe(HARD + OVERDRAFT);
  });
});
