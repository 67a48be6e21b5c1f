import { createHash, randomBytes } from 'node:crypto';
import { codeForStep, stepAt } from '@strongroom/core';
import { TestDevice, TestIdentity, totpSecretBytes } from '@strongroom/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { call, PASSWORD, registerUser, testServer, type TestServer } from '@strongroom/tests';
import { allRoutes } from '../app.js';
import { inlined } from './doc-check.js';

/**
 * What the wire says about secrets (decisions: "Isolation, secrets and durability"): logs name
 * routes by their template, /metrics can need a token, answers that hand out tokens are never
 * cached, and every 401 names the scheme it wants.
 */

let s: TestServer;
afterEach(async () => {
  await s?.close();
});
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const KEY = Buffer.from('wrapped keys under the link secret').toString('base64url');
const SEAL = Buffer.from('x25519 public key of the link......').toString('base64url');

async function user() {
  const u = await registerUser(s.app);
  const token = u.access_token;
  const accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  expect(
    (await call(s.app, 'PUT', '/v1/devices/directory', { token, raw: raw(dir), contentType: 'application/cbor' }))
      .status,
  ).toBeLessThan(300);
  return { ...u, token, accountId };
}

describe('request logs', () => {
  it('name the route template, never a path holding a link id, an upload id or a hash', async () => {
    s = await testServer();
    const a = await user();
    const albumId = (await call(s.app, 'POST', '/v1/albums', { token: a.token, body: { device_id: 'phone' } })).body
      .album_id as string;
    const data = new Uint8Array(40).fill(3);
    const up = await call(s.app, 'POST', '/upload', {
      token: a.token,
      body: { device_id: 'phone', kind: 'original', declared_size: 40, album_id: albumId },
    });
    expect(up.status).toBe(201);
    expect(
      (
        await call(s.app, 'PUT', `/upload/${up.body.upload_id}`, {
          token: a.token,
          raw: raw(data),
          contentType: 'application/octet-stream',
        })
      ).status,
    ).toBe(200);
    const fin = await call(s.app, 'POST', `/upload/${up.body.upload_id}/finalize`, {
      token: a.token,
      body: { content_hash: sha(data) },
    });
    expect(fin.status).toBe(200);
    const share = await call(s.app, 'POST', '/v1/links', {
      token: a.token,
      body: { kind: 'share', album_id: albumId, wrapped_key: KEY },
    });
    expect(share.status).toBe(201);
    const uploadLink = await call(s.app, 'POST', '/v1/links', {
      token: a.token,
      body: { kind: 'upload', album_id: albumId, seal_key: SEAL, max_bytes: 1000 },
    });
    expect(uploadLink.status).toBe(201);
    const secrets = [share.body.link_id as string, uploadLink.body.link_id as string];
    s.logger.lines.length = 0;

    // Everything a holder of the link does, and what a prober tries around it.
    expect((await call(s.app, 'GET', `/v1/links/${secrets[0]}`)).status).toBe(200);
    expect(
      (await s.request(`/v1/links/${secrets[0]}`, { method: 'HEAD', headers: { 'x-svc-protocol': '2026-11-01' } }))
        .status,
    ).toBe(200);
    const drop = await call(s.app, 'POST', `/v1/links/${secrets[1]}/drops`, { body: { declared_size: 5 } });
    expect(drop.status).toBe(201);
    secrets.push(drop.body.upload_token as string, drop.body.upload_id as string);
    expect(
      (
        await call(s.app, 'PUT', `/upload/${drop.body.upload_id}`, {
          raw: raw(new Uint8Array(5)),
          contentType: 'application/octet-stream',
          headers: { authorization: `Upload ${drop.body.upload_token}` },
        })
      ).status,
    ).toBe(200);
    expect((await call(s.app, 'GET', `/v1/links/${secrets[0]}/nothing-here`)).status).toBe(404);
    expect((await call(s.app, 'GET', `/v1/links/${secrets[0]}?x=${secrets[1]}`)).status).toBe(200);
    expect((await call(s.app, 'DELETE', `/v1/links/${secrets[0]}`)).status).toBe(401);

    const requests = s.logger.lines.filter((l) => l.event === 'http.request');
    expect(requests).toHaveLength(7);
    expect(requests.map((l) => l.fields['route'])).toEqual([
      // The template as /openapi.json and the metrics labels write it.
      '/v1/links/{link_id}',
      '/v1/links/{link_id}',
      '/v1/links/{link_id}/drops',
      '/upload/{id}',
      'unmatched',
      '/v1/links/{link_id}',
      '/v1/links/{link_id}',
    ]);
    const everything = JSON.stringify(s.logger.lines);
    for (const secret of secrets) expect(everything).not.toContain(secret);
  });
});

describe('/metrics', () => {
  it('is open when SVC_METRICS_TOKEN is unset', async () => {
    s = await testServer();
    expect((await s.request('/metrics')).status).toBe(200);
  });

  it('with SVC_METRICS_TOKEN set, answers only Authorization: Bearer <that token>; 401 with a Bearer challenge otherwise', async () => {
    const token = randomBytes(24).toString('base64url');
    s = await testServer({ SVC_METRICS_TOKEN: token });
    const none = await s.request('/metrics');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(await none.json()).toMatchObject({ status: 401, code: 'error.auth.invalid_credentials' });
    for (const wrong of [
      `Bearer ${token.slice(0, -1)}`,
      `Bearer ${token}x`,
      `Basic ${token}`,
      `Bearer ${token.toUpperCase()}`,
      'Bearer ',
    ]) {
      const r = await s.request('/metrics', { headers: { authorization: wrong } });
      expect(r.status, wrong).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe(
        wrong.startsWith('Bearer') ? 'Bearer error="invalid_token"' : 'Bearer',
      );
    }
    const ok = await s.request('/metrics', { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('http_requests_total');
    // The token never reaches a log line.
    expect(JSON.stringify(s.logger.lines)).not.toContain(token);
  });

  it('refuses a short SVC_METRICS_TOKEN at start, without echoing it', async () => {
    await expect(testServer({ SVC_METRICS_TOKEN: 'short-secret' })).rejects.toThrow(/SVC_METRICS_TOKEN/);
    await expect(testServer({ SVC_METRICS_TOKEN: 'short-secret' })).rejects.not.toThrow(/short-secret/);
  });
});

describe('Cache-Control: no-store on every answer that hands out a token', () => {
  it('every route whose answer carries an access token, a session token or a TOTP secret is marked, in the route table', async () => {
    s = await testServer();
    // Read from the served document: a new token route is covered by being in the table.
    const served = (await call(s.app, 'GET', '/openapi.json', { version: null })).body as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> }>
      >;
    };
    const carriers: string[] = [];
    for (const [path, ops] of Object.entries(served.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        // The named bodies read whole: the token members sit in the schemas they refer to.
        const ok = JSON.stringify(inlined(served, op.responses?.['200'] ?? {}));
        if (/"(access_token|session_token|secret)"/.test(ok)) carriers.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(carriers.sort()).toEqual(
      [
        'POST /v1/auth/login',
        'POST /v1/auth/login/recover-totp',
        'POST /v1/auth/login/verify-totp',
        'POST /v1/auth/oidc/complete',
        'POST /v1/auth/password',
        'POST /v1/auth/refresh',
        'POST /v1/auth/register',
        'POST /v1/auth/totp/enroll',
      ].sort(),
    );
    const marked = allRoutes(s.deps)
      .filter((r) => r.noStore === true)
      .map((r) => `${r.method} ${r.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`);
    expect(marked.sort()).toEqual(carriers.sort());
  });

  it('register, login, verify-totp, refresh, TOTP enroll and password change answer with it over HTTP', async () => {
    s = await testServer();
    const u = await registerUser(s.app, `nostore-${randomBytes(3).toString('hex')}@example.org`);
    const reg = await s.request('/v1/auth/register', {
      method: 'POST',
      headers: { 'x-svc-protocol': '2026-11-01', 'content-type': 'application/json' },
      body: JSON.stringify({ address: `r-${randomBytes(3).toString('hex')}@example.org`, password: PASSWORD }),
    });
    expect(reg.status).toBe(200);
    expect(reg.headers.get('cache-control')).toBe('no-store');
    const login = await call(s.app, 'POST', '/v1/auth/login', { body: { address: u.address, password: PASSWORD } });
    expect(login.status).toBe(200);
    expect(login.headers.get('cache-control')).toBe('no-store');
    const refresh = await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token } });
    expect(refresh.status).toBe(200);
    expect(refresh.headers.get('cache-control')).toBe('no-store');
    const enrolled = await call(s.app, 'POST', '/v1/auth/totp/enroll', { token: u.access_token });
    expect(enrolled.status).toBe(200);
    expect(enrolled.headers.get('cache-control')).toBe('no-store');
    const secret = totpSecretBytes(enrolled.body.secret);
    expect(
      (
        await call(s.app, 'POST', '/v1/auth/totp/verify-enrollment', {
          token: u.access_token,
          body: { code: codeForStep(secret, stepAt(s.clock.now())) },
        })
      ).status,
    ).toBe(204);
    s.clock.advance(30_000);
    const challenged = await call(s.app, 'POST', '/v1/auth/login', {
      body: { address: u.address, password: PASSWORD },
    });
    expect(challenged.status).toBe(202);
    const verified = await call(s.app, 'POST', '/v1/auth/login/verify-totp', {
      body: { challenge: challenged.body.challenge, code: codeForStep(secret, stepAt(s.clock.now())) },
    });
    expect(verified.status).toBe(200);
    expect(verified.headers.get('cache-control')).toBe('no-store');
    const changed = await call(s.app, 'POST', '/v1/auth/password', {
      token: verified.body.access_token,
      body: { current_password: PASSWORD, new_password: `${PASSWORD} again` },
    });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('cache-control')).toBe('no-store');
    // An ordinary read is not marked (nothing forbids caching a profile, the client decides).
    expect(
      (await call(s.app, 'GET', '/v1/auth/profile', { token: changed.body.access_token })).headers.get('cache-control'),
    ).toBeNull();
  });
});

describe('WWW-Authenticate on every 401', () => {
  it('names Bearer; with error="invalid_token" only when a bearer token was presented and refused', async () => {
    s = await testServer();
    const none = await call(s.app, 'GET', '/v1/auth/profile');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const garbage = await call(s.app, 'GET', '/v1/auth/profile', { token: 'not.a.token' });
    expect(garbage.status).toBe(401);
    expect(garbage.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    // The header's value is never echoed.
    expect(garbage.headers.get('www-authenticate')).not.toContain('not.a.token');
    const basic = await call(s.app, 'GET', '/v1/auth/profile', { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    expect(basic.headers.get('www-authenticate')).toBe('Bearer');
    // A credential sent in the body (a password, a session token): the scheme of the tokens handed out, no error code.
    const u = await registerUser(s.app);
    const wrong = await call(s.app, 'POST', '/v1/auth/login', {
      body: { address: u.address, password: 'wrong password entirely' },
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer');
    const stale = await call(s.app, 'POST', '/v1/auth/refresh', {
      body: { session_token: 'A'.repeat(22) },
      token: u.access_token,
    });
    expect(stale.status).toBe(401);
    expect(stale.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('an upload route offers Bearer and Upload, and marks a refused upload token', async () => {
    s = await testServer();
    const id = '0190a000-0000-7000-8000-000000000001';
    const none = await call(s.app, 'PUT', `/upload/${id}`, {
      raw: raw(new Uint8Array(1)),
      contentType: 'application/octet-stream',
    });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer, Upload');
    const guest = await call(s.app, 'PUT', `/upload/${id}`, {
      raw: raw(new Uint8Array(1)),
      contentType: 'application/octet-stream',
      headers: { authorization: 'Upload made-up' },
    });
    expect(guest.status).toBe(401);
    expect(guest.headers.get('www-authenticate')).toBe('Bearer, Upload error="invalid_token"');
    const bearer = await call(s.app, 'POST', `/upload/${id}/finalize`, {
      token: 'made.up.token',
      body: { content_hash: 'a'.repeat(64) },
    });
    expect(bearer.status).toBe(401);
    expect(bearer.headers.get('www-authenticate')).toBe('Bearer error="invalid_token", Upload');
  });

  it('the lookup route offers Bearer and SvcCapability, and marks a refused capability token', async () => {
    s = await testServer();
    const none = await call(s.app, 'GET', '/v1/discovery/lookup?handle=ann@example.org');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer, SvcCapability');
    const peer = await call(s.app, 'GET', '/v1/discovery/lookup?handle=ann@example.org', {
      headers: { authorization: 'SvcCapability made.up.token' },
    });
    expect(peer.status).toBe(401);
    expect(peer.headers.get('www-authenticate')).toBe('Bearer, SvcCapability error="invalid_token"');
  });
});
