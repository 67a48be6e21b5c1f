import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fromBase64url } from '@strongroom/core';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../cli.js';
import { call, registerUser, testServer, type TestServer } from '@strongroom/tests';
import { inlined } from '../http/doc-check.js';

let s: TestServer;
beforeEach(async () => {
  s = await testServer({ SVC_FEDERATION_PEERS: 'http://127.0.0.1:9' });
});
afterEach(async () => {
  await s.close();
});

const HOST = '127.0.0.1:8080';
const problem = (status: number, code: string) => ({
  status,
  body: expect.objectContaining({ status, code, type: 'about:blank' }),
});

async function user() {
  const u = await registerUser(s.app);
  const profile = await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token });
  return { ...u, accountId: profile.body.account_id as string, token: u.access_token };
}
const claim = (token: string, user: unknown) => call(s.app, 'PUT', '/v1/discovery/handle', { token, body: { user } });
const publish = (token: string, published: boolean) =>
  call(s.app, 'PUT', '/v1/discovery/public', { token, body: { published } });
const lookup = (handle: string, headers: Record<string, string>) =>
  call(s.app, 'GET', `/v1/discovery/lookup?handle=${encodeURIComponent(handle)}`, { headers });
const webfinger = (resource: string | null) =>
  s.app.request(
    resource === null ? '/.well-known/webfinger' : `/.well-known/webfinger?resource=${encodeURIComponent(resource)}`,
  );

describe('handles', () => {
  it('claims user@<host of SVC_BASE_URL> once; the profile shows it', async () => {
    const ann = await user();
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: ann.token })).body.handle).toBeNull();
    expect(await claim(ann.token, 'ann')).toMatchObject({ status: 200, body: { handle: `ann@${HOST}` } });
    expect(await claim(ann.token, 'ann')).toMatchObject({ status: 200, body: { handle: `ann@${HOST}` } });
    expect(await claim(ann.token, 'anne')).toMatchObject(problem(409, 'error.discovery.handle_fixed'));
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: ann.token })).body).toMatchObject({
      handle: `ann@${HOST}`,
    });
    const patched = await call(s.app, 'PATCH', '/v1/auth/profile', { token: ann.token, body: { display_name: 'Ann' } });
    expect(patched.body).toMatchObject({ handle: `ann@${HOST}`, display_name: 'Ann' });
    const bob = await user();
    expect(await claim(bob.token, 'ann')).toMatchObject(problem(409, 'error.discovery.handle_taken'));
  });

  it('refuses a malformed user name, an unknown key, and no token', async () => {
    const u = await user();
    for (const bad of ['', 'Ann', '.ann', 'a'.repeat(65), 'ann@x', 7, null])
      expect(await claim(u.token, bad), String(bad)).toMatchObject(problem(400, 'error.request.invalid'));
    expect(
      await call(s.app, 'PUT', '/v1/discovery/handle', { token: u.token, body: { user: 'ann', host: 'x' } }),
    ).toMatchObject(problem(400, 'error.request.invalid'));
    expect(await call(s.app, 'PUT', '/v1/discovery/handle', { body: { user: 'ann' } })).toMatchObject({ status: 401 });
  });

  it('publishes only with a handle, and unpublishes', async () => {
    const u = await user();
    expect(await publish(u.token, true)).toMatchObject(problem(409, 'error.discovery.no_handle'));
    await claim(u.token, 'pub');
    expect(await publish(u.token, true)).toMatchObject({
      status: 200,
      body: { handle: `pub@${HOST}`, published: true },
    });
    expect(await publish(u.token, false)).toMatchObject({ status: 200, body: { published: false } });
  });
});

describe('WebFinger', () => {
  it('answers the same bytes for no account, an unpublished handle and another host', async () => {
    const u = await user();
    await claim(u.token, 'quiet');
    const answers = await Promise.all([
      webfinger(`acct:nobody@${HOST}`),
      webfinger(`acct:quiet@${HOST}`),
      webfinger('acct:quiet@elsewhere.example'),
      webfinger(`acct:Quiet@${HOST}`),
    ]);
    const bodies = await Promise.all(answers.map((r) => r.text()));
    for (const r of answers) {
      expect(r.status).toBe(404);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
    }
    expect(new Set(bodies).size).toBe(1);
    expect(JSON.parse(bodies[0]!)).toMatchObject({ status: 404, code: 'error.not_found' });
    // Published then withdrawn is unpublished again.
    await publish(u.token, true);
    await publish(u.token, false);
    expect(await (await webfinger(`acct:quiet@${HOST}`)).text()).toBe(bodies[0]);
  });

  it('answers a published handle as JRD with its display name, open to any origin', async () => {
    const u = await user();
    await claim(u.token, 'open');
    await publish(u.token, true);
    let r = await webfinger(`acct:open@${HOST}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/jrd+json');
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('x-svc-protocol-max')).toBe('2026-11-01');
    expect(await r.json()).toEqual({ subject: `acct:open@${HOST}`, properties: { 'urn:svc:display_name': null } });
    await call(s.app, 'PATCH', '/v1/auth/profile', { token: u.token, body: { display_name: 'Open Door' } });
    r = await webfinger(`acct:open@${HOST.toUpperCase()}`);
    expect(await r.json()).toEqual({
      subject: `acct:open@${HOST}`,
      properties: { 'urn:svc:display_name': 'Open Door' },
    });
    // A URI scheme is case-insensitive (RFC 3986 section 3.1).
    r = await webfinger(`ACCT:open@${HOST}`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      subject: `acct:open@${HOST}`,
      properties: { 'urn:svc:display_name': 'Open Door' },
    });
  });

  it('is 400 without a well-formed resource', async () => {
    for (const resource of [null, '', 'open@127.0.0.1:8080', 'acct:open', 'https://x.example/open', 'acct:@x']) {
      const r = await webfinger(resource);
      expect(r.status, String(resource)).toBe(400);
      expect((await r.json()).code).toBe('error.request.invalid');
    }
  });
});

describe('authenticated lookup', () => {
  it('answers the identity key and the signed directory exactly as accepted, and nothing else', async () => {
    const ann = await user();
    await claim(ann.token, 'ann');
    const looker = await user();
    const bearer = { authorization: `Bearer ${looker.token}` };
    const before = await lookup(`ann@${HOST}`, bearer);
    expect(before).toMatchObject({
      status: 200,
      body: {
        handle: `ann@${HOST}`,
        account_id: ann.accountId,
        display_name: null,
        identity_key: null,
        directory: null,
      },
    });
    const identity = new TestIdentity(ann.address);
    const signed = identity.signDirectory(ann.accountId, 1, [new TestDevice('phone')]);
    expect(
      (
        await call(s.app, 'PUT', '/v1/devices/directory', {
          token: ann.token,
          raw: signed.slice(),
          contentType: 'application/cbor',
        })
      ).status,
    ).toBe(200);
    const after = await lookup(`ann@${HOST}`, bearer);
    expect(Object.keys(after.body).sort()).toEqual([
      'account_id',
      'directory',
      'display_name',
      'handle',
      'identity_key',
    ]);
    expect(fromBase64url(after.body.identity_key)).toEqual(identity.publicKey);
    expect(fromBase64url(after.body.directory)).toEqual(signed);
    // Unpublished handles are found by signed-in users: publishing is about anonymous readers only.
    expect(after.status).toBe(200);
  });

  it('is 404 for an unknown handle, 404 for a host that is not a peer, 400 for a malformed one', async () => {
    const u = await user();
    const bearer = { authorization: `Bearer ${u.token}` };
    expect(await lookup(`nobody@${HOST}`, bearer)).toMatchObject(problem(404, 'error.not_found'));
    expect(await lookup('ann@stranger.example', bearer)).toMatchObject(problem(404, 'error.federation.unknown_peer'));
    expect(await lookup('Ann', bearer)).toMatchObject(problem(400, 'error.request.invalid'));
  });

  /** A peer on loopback answering `answer` to every request, listed as this server's only peer. */
  async function withPeer(
    run: (peer: { host: string; answer: (a: PeerAnswer) => void }) => Promise<void>,
  ): Promise<void> {
    let answer: PeerAnswer = { status: 500, body: {}, retryAfter: null };
    const peer = createServer((_req, res) => {
      res.writeHead(answer.status, {
        'content-type': 'application/problem+json',
        ...(answer.retryAfter ? { 'retry-after': answer.retryAfter } : {}),
      });
      res.end(JSON.stringify(answer.body));
    });
    await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
    const port = (peer.address() as AddressInfo).port;
    await s.close();
    s = await testServer({ SVC_FEDERATION_PEERS: `http://127.0.0.1:${port}` });
    try {
      await run({ host: `127.0.0.1:${port}`, answer: (a) => (answer = a) });
    } finally {
      await new Promise((r) => peer.close(r));
    }
  }
  interface PeerAnswer {
    status: number;
    body: unknown;
    retryAfter: string | null;
  }

  it("passes a peer's 200 on only when it is for the handle asked: keys under another handle are a bad answer", async () => {
    await withPeer(async (peer) => {
      const u = await user();
      const bearer = { authorization: `Bearer ${u.token}` };
      await claim(u.token, 'ann');
      const keys = (handle: string) => ({
        handle,
        account_id: 'acc',
        display_name: 'Mallory',
        identity_key: 'A'.repeat(43),
        directory: 'oWFhAQ',
      });
      peer.answer({ status: 200, body: keys(`eve@${peer.host}`), retryAfter: null });
      expect(await lookup(`eve@${peer.host}`, bearer)).toMatchObject({ status: 200, body: keys(`eve@${peer.host}`) });
      // The peer's own other user, our user, another server's user: none is the handle asked.
      for (const other of [`mallory@${peer.host}`, `ann@${HOST}`, 'eve@elsewhere.example']) {
        peer.answer({ status: 200, body: keys(other), retryAfter: null });
        expect(await lookup(`eve@${peer.host}`, bearer), other).toMatchObject(
          problem(502, 'error.federation.peer_unavailable'),
        );
      }
    });
  });

  it("takes a peer's 200 that is not the lookup answer (a key that is no Ed25519 key, a key without its directory) as a bad answer", async () => {
    await withPeer(async (peer) => {
      const u = await user();
      const bearer = { authorization: `Bearer ${u.token}` };
      const handle = `eve@${peer.host}`;
      for (const [identity_key, directory] of [
        ['not base64!!', 'oWFhAQ'],
        ['A'.repeat(42), 'oWFhAQ'],
        ['A'.repeat(43), null],
        [null, 'oWFhAQ'],
      ]) {
        peer.answer({
          status: 200,
          body: { handle, account_id: 'acc', display_name: null, identity_key, directory },
          retryAfter: null,
        });
        expect(await lookup(handle, bearer), `${identity_key} ${directory}`).toMatchObject(
          problem(502, 'error.federation.peer_unavailable'),
        );
      }
    });
  });

  it("passes a peer's refusal on with the peer's status and code, whatever the code, in its own words, without blaming the caller's token", async () => {
    // A peer of a newer build (or a misbehaving one): codes this server does not know, and codes it
    // knows at other statuses. Their status is the peer's (spec §15.4).
    await withPeer(async (peer) => {
      const u = await user();
      const bearer = { authorization: `Bearer ${u.token}` };
      const cases: [number, string][] = [
        [403, 'error.peer.newer_code'],
        [418, 'error.peer.teapot'],
        [403, 'error.not_found'],
        [503, 'error.auth.unavailable'],
        [401, 'error.federation.capability_invalid'],
        [401, 'error.auth.session_invalid'],
      ];
      for (const [status, code] of cases) {
        peer.answer({
          status,
          body: {
            type: 'https://peer.example/p',
            title: 'Sign in again',
            status,
            code,
            detail: 'your session is dead, sign in again',
            extra_member: 1,
          },
          retryAfter: null,
        });
        const r = await lookup(`eve@${peer.host}`, bearer);
        expect(r, `${status} ${code}`).toMatchObject({
          status,
          body: { type: 'about:blank', status, code, title: 'Refused by the peer server' },
        });
        // Our words, not the peer's: nothing else of its body reaches the caller.
        expect(Object.keys(r.body).sort(), `${status} ${code}`).toEqual(['code', 'detail', 'status', 'title', 'type']);
        expect(r.body.detail).toBe(`The peer server http://${peer.host} refused this lookup (${code}).`);
        // A peer's 401 refused the capability token this server minted, not the caller's access token.
        if (status === 401) expect(r.headers.get('www-authenticate')).not.toContain('invalid_token');
      }
      peer.answer({
        status: 429,
        body: {
          type: 'about:blank',
          title: 'x',
          status: 429,
          code: 'error.federation.rate_limited',
          detail: 'slow down',
        },
        retryAfter: '7',
      });
      const limited = await lookup(`eve@${peer.host}`, bearer);
      expect(limited).toMatchObject(problem(429, 'error.federation.rate_limited'));
      expect(limited.headers.get('retry-after')).toBe('7');
      // Its codes are counted under one label: a peer cannot grow this server's metrics.
      const metrics = await (await s.app.request('/metrics')).text();
      expect(metrics).not.toContain('error.peer.');
    });
  });

  it("bounds each account's lookups (60 a minute by default), unpublished and unknown handles alike: the 61st is 429 with Retry-After, another account is untouched", async () => {
    const ann = await user();
    const bob = await user();
    await claim(bob.token, 'bob');
    const asAnn = { authorization: `Bearer ${ann.token}` };
    for (let i = 0; i < 60; i++) {
      const handle = i % 2 === 0 ? `bob@${HOST}` : `nobody${i}@${HOST}`;
      expect((await lookup(handle, asAnn)).status, `lookup ${i + 1}`).toBe(i % 2 === 0 ? 200 : 404);
    }
    const refused = await lookup(`bob@${HOST}`, asAnn);
    expect(refused).toMatchObject(problem(429, 'error.request.too_many'));
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await lookup(`bob@${HOST}`, { authorization: `Bearer ${bob.token}` })).status).toBe(200);
    s.clock.advance(1_000);
    expect((await lookup(`bob@${HOST}`, asAnn)).status).toBe(200);
  });

  it('is 401 without a token, with a bad one, and with something that is not a capability token', async () => {
    const u = await user();
    await claim(u.token, 'ann');
    const h = `ann@${HOST}`;
    expect(await lookup(h, {})).toMatchObject({ status: 401 });
    expect(await lookup(h, { authorization: 'Bearer nope' })).toMatchObject({ status: 401 });
    expect(await lookup(h, { authorization: 'Basic YTpi' })).toMatchObject({ status: 401 });
    expect(await lookup(h, { authorization: 'SvcCapability nope' })).toMatchObject(
      problem(401, 'error.federation.capability_invalid'),
    );
    // An access token is never a capability token.
    expect(await lookup(h, { authorization: `SvcCapability ${u.token}` })).toMatchObject(
      problem(401, 'error.federation.capability_invalid'),
    );
    // A capability token this server minted is not an access token (nor addressed to this server).
    const { token } = await s.deps.federation.mint('http://127.0.0.1:9', u.accountId);
    expect(await lookup(h, { authorization: `Bearer ${token}` })).toMatchObject(
      problem(401, 'error.auth.session_invalid'),
    );
  });

  it('honours X-Svc-Act-As as every authenticated route does: an account the caller does not own is 403', async () => {
    const u = await user();
    await claim(u.token, 'bea');
    const h = `bea@${HOST}`;
    for (const actAs of ['0190a6a1-0000-7000-8000-000000000000', 'zzz', u.accountId]) {
      expect(await lookup(h, { authorization: `Bearer ${u.token}`, 'x-svc-act-as': actAs }), actAs).toMatchObject(
        problem(403, 'error.auth.not_an_owner'),
      );
    }
    // An owner acting as its sponsored account looks up as that account.
    const kid = (await call(s.app, 'POST', '/v1/sponsored', { token: u.token })).body.account_id as string;
    expect(await lookup(h, { authorization: `Bearer ${u.token}`, 'x-svc-act-as': kid })).toMatchObject({ status: 200 });
  });
});

describe('revoked-jti', () => {
  it('lists revocations of the last 24 hours, computed from time, and the CLI revokes by jti or by peer', async () => {
    const peer = 'http://127.0.0.1:9';
    const empty = await call(s.app, 'GET', '/.well-known/svc/revoked-jti', { version: null });
    expect(empty).toMatchObject({
      status: 200,
      body: { issuer: 'http://127.0.0.1:8080', window_s: 86400, revoked: [] },
    });
    const one = await s.deps.federation.mint(peer, 'a');
    const two = await s.deps.federation.mint(peer, 'b');
    const three = await s.deps.federation.mint('http://127.0.0.1:10', 'c');
    expect(await COMMANDS['revoke-capability']!.run(s.deps, [one.claims.jti])).toContain(one.claims.jti);
    await expect(COMMANDS['revoke-capability']!.run(s.deps, [one.claims.jti])).rejects.toThrow(/no unrevoked/);
    s.clock.advance(3_600_000);
    expect(await COMMANDS['revoke-peer-capabilities']!.run(s.deps, [`${peer}/`])).toBe(
      `revoked 0 capability tokens minted for ${peer}`,
    );
    const four = await s.deps.federation.mint(peer, 'd');
    expect(await COMMANDS['revoke-peer-capabilities']!.run(s.deps, [peer])).toBe(
      `revoked 1 capability token minted for ${peer}`,
    );
    const listed = await call(s.app, 'GET', '/.well-known/svc/revoked-jti', { version: null });
    expect(listed.body.revoked).toEqual([
      {
        jti: one.claims.jti,
        revoked_at: '2026-11-21T10:00:00.000Z',
        exp: new Date(one.claims.exp * 1000).toISOString(),
      },
      {
        jti: four.claims.jti,
        revoked_at: '2026-11-21T11:00:00.000Z',
        exp: new Date(four.claims.exp * 1000).toISOString(),
      },
    ]);
    expect(listed.body.revoked.map((r: { jti: string }) => r.jti)).not.toContain(two.claims.jti); // expired before the peer-wide revocation
    expect(listed.body.revoked.map((r: { jti: string }) => r.jti)).not.toContain(three.claims.jti);
    s.clock.advance(23 * 3_600_000);
    expect(
      (await call(s.app, 'GET', '/.well-known/svc/revoked-jti', { version: null })).body.revoked.map(
        (r: { jti: string }) => r.jti,
      ),
    ).toEqual([four.claims.jti]);
    s.clock.advance(3_600_000);
    expect((await call(s.app, 'GET', '/.well-known/svc/revoked-jti', { version: null })).body.revoked).toEqual([]);
  });

  it('server info names the federation endpoint', async () => {
    const info = await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null });
    expect(info.body.federation_endpoint).toBe('http://127.0.0.1:8080/v1/discovery/lookup');
  });
});

describe('API reference', () => {
  it('declares every discovery route with its statuses, codes and both lookup schemes', async () => {
    const doc = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
    expect(doc.components.securitySchemes.svcCapability).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
    });
    const get = doc.paths['/v1/discovery/lookup'].get;
    expect(get.security).toEqual([{ bearer: [] }, { svcCapability: [] }]);
    expect(Object.keys(get.responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '426',
      '429',
      '4XX',
      '502',
      '503',
    ]);
    expect(get.parameters).toContainEqual({ $ref: '#/components/parameters/X-Svc-Act-As' });
    expect(get.responses['401'].description).toContain('error.federation.capability_invalid');
    expect(doc.paths['/v1/discovery/handle'].put.responses['409'].description).toContain(
      'error.discovery.handle_fixed',
    );
    expect(doc.paths['/v1/discovery/public'].put.responses['409'].description).toContain('error.discovery.no_handle');
    expect(doc.paths['/.well-known/webfinger'].get.responses['200'].content).toHaveProperty('application/jrd+json');
    expect(
      inlined(doc, doc.paths['/.well-known/svc/revoked-jti'].get.responses['200'].content['application/json'].schema)
        .properties,
    ).toHaveProperty('revoked');
  });
});
