import { connect } from 'node:net';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, VERSION, type TestServer } from '@strongroom/tests';
import { allRoutes } from '../app.js';
import { readsAuthorization } from './challenge.js';

/**
 * A request that names its credentials twice. Node's parser keeps the first `Authorization` line
 * and drops the others, so a proxy that judged the last one and this server would disagree about
 * who is calling. fetch() joins repeated headers into one line, so these requests are written by
 * hand on a socket.
 */

let s: TestServer;
let token: string;
let accountId: string;
const raw = (b: Uint8Array): BodyInit => b as unknown as BodyInit;

beforeAll(async () => {
  s = await testServer();
  const u = await registerUser(s.app);
  token = u.access_token;
  accountId = (await call(s.app, 'GET', '/v1/auth/profile', { token })).body.account_id as string;
  const dir = new TestIdentity(accountId).signDirectory(accountId, 1, [new TestDevice('phone')]);
  expect(
    (await call(s.app, 'PUT', '/v1/devices/directory', { token, raw: raw(dir), contentType: 'application/cbor' }))
      .status,
  ).toBeLessThan(300);
});
afterAll(() => s.close());

interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: any;
}

/** Writes one request exactly as given (each header its own line) and reads the answer until the server closes. */
function exchange(method: string, path: string, headers: readonly [string, string][], body = ''): Promise<RawAnswer> {
  const url = new URL(s.baseUrl);
  const lines = [
    `${method} ${path} HTTP/1.1`,
    `Host: ${url.host}`,
    'Connection: close',
    ...headers.map(([k, v]) => `${k}: ${v}`),
  ];
  if (body !== '') lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(`${lines.join('\r\n')}\r\n\r\n${body}`));
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine, ...headerLines] = text.slice(0, split).split('\r\n');
      const headers = new Map(
        headerLines.map(
          (l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string],
        ),
      );
      let rest = text.slice(split + 4);
      if (headers.get('transfer-encoding') === 'chunked') {
        let decoded = '';
        for (;;) {
          const eol = rest.indexOf('\r\n');
          const size = parseInt(rest.slice(0, eol), 16);
          if (!size) break;
          decoded += rest.slice(eol + 2, eol + 2 + size);
          rest = rest.slice(eol + 2 + size + 2);
        }
        rest = decoded;
      }
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: rest === '' ? null : JSON.parse(rest) });
    });
  });
}

const V: [string, string] = ['X-Svc-Protocol', VERSION];
const refusal = { status: 400, body: expect.objectContaining({ status: 400, code: 'error.request.invalid' }) };

describe('a request that carries Authorization more than once', () => {
  it('is refused with 400 on an authenticated route, whichever line holds the good token', async () => {
    const bad = 'Bearer not-a-token';
    for (const pair of [
      [`Bearer ${token}`, bad],
      [bad, `Bearer ${token}`],
      [`Bearer ${token}`, `Bearer ${token}`],
    ]) {
      const answer = await exchange('GET', '/v1/auth/profile', [
        V,
        ...pair.map((a): [string, string] => ['Authorization', a]),
      ]);
      expect(answer).toMatchObject(refusal);
      expect(answer.headers.get('content-type')).toBe('application/problem+json');
      expect(answer.headers.get('www-authenticate')).toBeUndefined();
    }
    // Spelled in any case, the field is the same field.
    expect(
      await exchange('GET', '/v1/auth/profile', [
        V,
        ['authorization', `Bearer ${token}`],
        ['AUTHORIZATION', `Bearer ${token}`],
      ]),
    ).toMatchObject(refusal);
  });

  it('is refused before anything is read or changed: a write with a good token changes nothing', async () => {
    const before = (await call(s.app, 'GET', '/v1/albums', { token })).body;
    const body = JSON.stringify({ device_id: 'phone' });
    const answer = await exchange(
      'POST',
      '/v1/albums',
      [
        V,
        ['Authorization', `Bearer ${token}`],
        ['Authorization', `Bearer ${token}`],
        ['Content-Type', 'application/json'],
      ],
      body,
    );
    expect(answer).toMatchObject(refusal);
    expect((await call(s.app, 'GET', '/v1/albums', { token })).body).toEqual(before);
  });

  it('is refused on a route where the token is optional', async () => {
    const body = JSON.stringify({
      return_to: 'https://app.example/done',
      purpose: 'link',
      app_challenge: 'A'.repeat(43),
    });
    const answer = await exchange(
      'POST',
      '/v1/auth/oidc/start',
      [
        V,
        ['Authorization', `Bearer ${token}`],
        ['Authorization', 'Bearer other'],
        ['Content-Type', 'application/json'],
      ],
      body,
    );
    expect(answer).toMatchObject(refusal);
  });

  it('is refused on a guest upload route, Upload and Bearer lines alike', async () => {
    const albumId = (await call(s.app, 'POST', '/v1/albums', { token, body: { device_id: 'phone' } })).body
      .album_id as string;
    const seal = Buffer.from('x25519 public key of the link......').toString('base64url');
    const link = await call(s.app, 'POST', '/v1/links', {
      token,
      body: { kind: 'upload', album_id: albumId, seal_key: seal, max_bytes: 1000 },
    });
    expect(link.status).toBe(201);
    const drop = await call(s.app, 'POST', `/v1/links/${link.body.link_id}/drops`, { body: { declared_size: 5 } });
    expect(drop.status).toBe(201);
    const guest = `Upload ${drop.body.upload_token}`;
    const octets: [string, string] = ['Content-Type', 'application/octet-stream'];
    for (const pair of [
      [guest, guest],
      [guest, `Bearer ${token}`],
      [`Bearer ${token}`, guest],
    ]) {
      const answer = await exchange(
        'PUT',
        `/upload/${drop.body.upload_id}`,
        [V, octets, ...pair.map((a): [string, string] => ['Authorization', a])],
        'abcde',
      );
      expect(answer).toMatchObject(refusal);
    }
    // Nothing was written: the one good request still finds the upload empty and takes the bytes.
    const once = await exchange(
      'PUT',
      `/upload/${drop.body.upload_id}`,
      [V, octets, ['Authorization', guest]],
      'abcde',
    );
    expect(once.status).toBe(200);
  });

  it('is refused on every route that reads Authorization, whatever its own checks', async () => {
    const routes = allRoutes(s.deps).filter(readsAuthorization);
    expect(routes.length).toBeGreaterThan(40);
    for (const r of routes) {
      const path = r.path.replace(/:[A-Za-z_]+/g, 'x');
      const answer = await exchange(r.method, path, [
        V,
        ['Authorization', `Bearer ${token}`],
        ['Authorization', `Bearer ${token}`],
      ]);
      expect(answer, `${r.method} ${r.path}`).toMatchObject(refusal);
    }
  });

  it('is not refused with one line: the token works, on each kind of route', async () => {
    const profile = await exchange('GET', '/v1/auth/profile', [V, ['Authorization', `Bearer ${token}`]]);
    expect(profile).toMatchObject({ status: 200, body: { account_id: accountId } });
    expect((await exchange('GET', '/v1/auth/profile', [V])).status).toBe(401);
    // An unrelated header repeated is no concern of this rule.
    expect(
      (
        await exchange('GET', '/v1/auth/profile', [
          V,
          ['Authorization', `Bearer ${token}`],
          ['Accept', 'application/json'],
          ['Accept', '*/*'],
        ])
      ).status,
    ).toBe(200);
  });
});

describe('the other credential headers, repeated', () => {
  // Node joins these into one value ("a, b"), which names no version and no account: both are
  // refused already, as a malformed version (426) and as an account the caller does not own (403).
  it('X-Svc-Protocol twice is a malformed version', async () => {
    const answer = await exchange('GET', '/v1/auth/profile', [V, V, ['Authorization', `Bearer ${token}`]]);
    expect(answer).toMatchObject({ status: 426, body: { code: 'error.protocol.unsupported' } });
  });

  it('X-Svc-Act-As twice names no account', async () => {
    const sponsored = await call(s.app, 'POST', '/v1/sponsored', { token });
    expect(sponsored.status).toBe(201);
    const id = sponsored.body.account_id as string;
    const once = await exchange('GET', '/v1/auth/profile', [
      V,
      ['Authorization', `Bearer ${token}`],
      ['X-Svc-Act-As', id],
    ]);
    expect(once).toMatchObject({ status: 200, body: { account_id: id } });
    const twice = await exchange('GET', '/v1/auth/profile', [
      V,
      ['Authorization', `Bearer ${token}`],
      ['X-Svc-Act-As', id],
      ['X-Svc-Act-As', id],
    ]);
    expect(twice).toMatchObject({ status: 403, body: { code: 'error.auth.not_an_owner' } });
  });
});
