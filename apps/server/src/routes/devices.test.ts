import { canonicalCbor, decodeCanonicalCbor, fromBase64url } from '@strongroom/core';
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
const phone = new TestDevice('phone');
const laptop = new TestDevice('laptop');
const SMALL_ORDER = Uint8Array.from(
  Buffer.from('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa', 'hex'),
);

async function user() {
  const u = await registerUser(s.app);
  const profile = await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token });
  return { ...u, accountId: profile.body.account_id as string, identity: new TestIdentity(u.address) };
}
const put = (token: string, body: Uint8Array, contentType = 'application/cbor') =>
  call(s.app, 'PUT', '/v1/devices/directory', { token, raw: body.slice(), contentType });

describe('PUT and GET /v1/devices/directory', () => {
  it('accepts a signed directory and GET returns the accepted bytes as application/cbor', async () => {
    const u = await user();
    expect(await call(s.app, 'GET', '/v1/devices/directory', { token: u.access_token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    const body = u.identity.signDirectory(u.accountId, 1, [phone]);
    const r = await put(u.access_token, body);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ seq: 1, devices: 1, identity_key: expect.any(String) });
    expect(fromBase64url(r.body.identity_key)).toEqual(u.identity.publicKey);
    const res = await s.request('/v1/devices/directory', {
      headers: { authorization: `Bearer ${u.access_token}`, 'x-svc-protocol': '2026-11-01' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/cbor');
    expect(res.headers.get('x-svc-protocol-max')).toBe('2026-11-01');
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(body);
  });

  it('later directories need the anchor and a higher seq', async () => {
    const u = await user();
    await put(u.access_token, u.identity.signDirectory(u.accountId, 2, [phone]));
    expect(await put(u.access_token, new TestIdentity('thief').signDirectory(u.accountId, 3, [phone]))).toMatchObject(
      problem(400, 'error.device.directory_invalid'),
    );
    expect(await put(u.access_token, u.identity.signDirectory(u.accountId, 2, [phone, laptop]))).toMatchObject({
      ...problem(409, 'error.conflict'),
      body: expect.objectContaining({ current_seq: 2 }),
    });
    expect((await put(u.access_token, u.identity.signDirectory(u.accountId, 3, [phone, laptop]))).status).toBe(200);
  });

  it('seq grows by at most 1,000,000 per publication: a jump to 2^53-1 is 400 and the directory stays replaceable', async () => {
    const u = await user();
    expect(
      await put(u.access_token, u.identity.signDirectory(u.accountId, Number.MAX_SAFE_INTEGER, [phone])),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(await call(s.app, 'GET', '/v1/devices/directory', { token: u.access_token })).toMatchObject(
      problem(404, 'error.not_found'),
    );
    expect((await put(u.access_token, u.identity.signDirectory(u.accountId, 5, [phone]))).status).toBe(200);
    expect(
      await put(u.access_token, u.identity.signDirectory(u.accountId, Number.MAX_SAFE_INTEGER, [phone, laptop])),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(await put(u.access_token, u.identity.signDirectory(u.accountId, 1_000_006, [phone, laptop]))).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(
      (await put(u.access_token, u.identity.signDirectory(u.accountId, 1_000_005, [phone, laptop]))).body,
    ).toMatchObject({ seq: 1_000_005, devices: 2 });
    expect((await put(u.access_token, u.identity.signDirectory(u.accountId, 1_000_006, [phone]))).body).toMatchObject({
      seq: 1_000_006,
      devices: 1,
    });
  });

  it('refuses bad keys with 400 error.device.invalid_key', async () => {
    const u = await user();
    for (const entry of [
      { ...phone.entry(), ed25519: SMALL_ORDER },
      { ...phone.entry(), mldsa65: phone.mldsa65.subarray(1) },
      { ...phone.entry(), mldsa65: new Uint8Array(1952) },
    ]) {
      expect(await put(u.access_token, u.identity.signDirectory(u.accountId, 1, [entry]))).toMatchObject(
        problem(400, 'error.device.invalid_key'),
      );
    }
  });

  it('refuses a signature for another account, malformed or non-canonical CBOR, the wrong media type, no session, and oversize', async () => {
    const u = await user();
    const other = await user();
    expect(await put(u.access_token, u.identity.signDirectory(other.accountId, 1, [phone]))).toMatchObject(
      problem(400, 'error.device.directory_invalid'),
    );
    expect(await put(u.access_token, new Uint8Array([0xa1, 0x61]))).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    const good = u.identity.signDirectory(u.accountId, 1, [phone]);
    const longSeq = Uint8Array.from(
      Buffer.from(Buffer.from(good).toString('hex').replace('6373657101', '637365711801'), 'hex'),
    );
    expect(await put(u.access_token, longSeq)).toMatchObject(problem(400, 'error.request.invalid'));
    const value = decodeCanonicalCbor(good) as Record<string, unknown>;
    expect(await put(u.access_token, canonicalCbor({ ...value, extra: true }))).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(await put(u.access_token, good, 'application/json')).toMatchObject(
      problem(415, 'error.request.unsupported_media_type'),
    );
    expect((await put(u.access_token, good, 'application/cbor; charset=binary')).status).toBe(200);
    expect(
      await call(s.app, 'PUT', '/v1/devices/directory', { raw: good.slice(), contentType: 'application/cbor' }),
    ).toMatchObject(problem(401, 'error.auth.session_invalid'));
    expect(await put(u.access_token, new Uint8Array(256 * 1024 + 1))).toMatchObject(
      problem(413, 'error.request.too_large'),
    );
    expect(await call(s.app, 'DELETE', '/v1/devices/directory', { token: u.access_token })).toMatchObject(
      problem(405, 'error.request.method_not_allowed'),
    );
  });
});

describe('revoke-all', () => {
  async function challenge(token: string) {
    const r = await call(s.app, 'POST', '/v1/auth/logout/all/challenge', { token });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expires_in: 300 });
    return r.body.challenge as string;
  }
  const redeem = (challenge: string, signature: string, version?: string) =>
    call(s.app, 'POST', '/v1/auth/logout/all', { body: { challenge, signature }, ...(version ? { version } : {}) });

  it('closes every session of the account, with no session of its own, once', async () => {
    const u = await user();
    await put(u.access_token, u.identity.signDirectory(u.accountId, 1, [phone]));
    const second = await call(s.app, 'POST', '/v1/auth/login', {
      body: { address: u.address, password: 'correct horse battery staple' },
    });
    const bystander = await user();
    const c = await challenge(u.access_token);
    const sig = u.identity.signLogoutAll(u.accountId, fromBase64url(c)!);
    // Signing out is not a write: a client below Min may still do it.
    expect(await redeem(c, sig, '2026-01-15')).toMatchObject({ status: 200, body: { sessions_closed: 2 } });
    for (const token of [u.access_token, second.body.access_token]) {
      expect(await call(s.app, 'GET', '/v1/auth/profile', { token })).toMatchObject(
        problem(401, 'error.auth.session_invalid'),
      );
    }
    expect(await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: bystander.access_token })).status).toBe(200);
    expect(await redeem(c, sig)).toMatchObject(problem(401, 'error.auth.proof_invalid'));
  });

  it('every failure is the same 401 and burns the challenge', async () => {
    const u = await user();
    await put(u.access_token, u.identity.signDirectory(u.accountId, 1, [phone]));
    const bodies: unknown[] = [];
    let c = await challenge(u.access_token);
    const wrong = await redeem(c, new TestIdentity('someone else').signLogoutAll(u.accountId, fromBase64url(c)!));
    bodies.push(wrong.body);
    expect(await redeem(c, u.identity.signLogoutAll(u.accountId, fromBase64url(c)!))).toMatchObject(
      problem(401, 'error.auth.proof_invalid'),
    );
    c = await challenge(u.access_token);
    s.clock.advance(300_000);
    bodies.push((await redeem(c, u.identity.signLogoutAll(u.accountId, fromBase64url(c)!))).body);
    bodies.push((await redeem('A'.repeat(43), 'AAAA')).body);
    bodies.push((await redeem('not base64!', 'x')).body);
    // An account with no anchor yet.
    const fresh = await user();
    const fc = await challenge(fresh.access_token);
    bodies.push((await redeem(fc, fresh.identity.signLogoutAll(fresh.accountId, fromBase64url(fc)!))).body);
    for (const b of bodies) expect(b).toEqual(bodies[0]);
    expect(bodies[0]).toMatchObject({ status: 401, code: 'error.auth.proof_invalid' });
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).status).toBe(200);
  });

  it('the challenge needs a session; redeeming refuses malformed bodies', async () => {
    expect(await call(s.app, 'POST', '/v1/auth/logout/all/challenge', {})).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
    expect(await call(s.app, 'POST', '/v1/auth/logout/all', { body: { challenge: 'x' } })).toMatchObject(
      problem(400, 'error.request.invalid'),
    );
    expect(
      await call(s.app, 'POST', '/v1/auth/logout/all', { body: { challenge: 'x', signature: 'y', account_id: 'z' } }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(await call(s.app, 'POST', '/v1/auth/logout/all', { raw: 'x', contentType: 'text/plain' })).toMatchObject(
      problem(415, 'error.request.unsupported_media_type'),
    );
  });
});
