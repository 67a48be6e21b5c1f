import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchCall } from '@strongroom/tests';
import { startServer, type ServerProcess } from '@strongroom/tests/spawn';

// The real server (main.ts, SQLite, @hono/node-server) over loopback. app.request() tests never see
// Node's IncomingMessage, which the server reads headers and bodies from directly.

const V = { 'x-svc-protocol': '2026-11-01' };
let server: ServerProcess | undefined;
let BASE: string;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'strongroom-net-'));
  server = await startServer({ env: { SVC_DATA_DIR: dataDir, SVC_QUOTA_HARD_BYTES: '1000000' } });
  BASE = server.url;
}, 30_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const api = (method: string, path: string, o: { body?: unknown; token?: string; raw?: BodyInit; type?: string } = {}) =>
  fetchCall(BASE, method, path, {
    ...(o.body !== undefined ? { body: o.body } : {}),
    ...(o.token ? { token: o.token } : {}),
    ...(o.raw !== undefined ? { raw: o.raw } : {}),
    ...(o.type ? { contentType: o.type } : {}),
  });

/** A chunked body of `size` bytes with no Content-Length, sent with node:http. */
function chunked(path: string, size: number): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${BASE}${path}`,
      { method: 'POST', headers: { ...V, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', (e) =>
      (e as NodeJS.ErrnoException).code === 'EPIPE' || (e as NodeJS.ErrnoException).code === 'ECONNRESET'
        ? undefined
        : reject(e),
    );
    const piece = Buffer.alloc(8192, 0x61);
    for (let sent = 0; sent < size; sent += piece.length) req.write(piece);
    req.end();
  });
}

describe('the server over loopback (SQLite)', () => {
  it('signs up, authenticates from the Authorization header, and advertises the protocol window', async () => {
    const reg = await api('POST', '/v1/auth/register', {
      body: { address: 'net@example.org', password: 'correct horse battery staple' },
    });
    expect(reg.status).toBe(200);
    const me = await api('GET', '/v1/auth/profile', { token: reg.body.access_token });
    expect(me).toMatchObject({ status: 200, body: { address: 'net@example.org' } });
    expect(me.headers.get('x-svc-protocol-max')).toBe('2026-11-01');
    expect((await api('GET', '/v1/auth/profile')).status).toBe(401);
    const noVersion = await fetch(`${BASE}/v1/auth/profile`, {
      headers: { authorization: `Bearer ${reg.body.access_token}` },
    });
    expect(noVersion.status).toBe(426);
    expect(noVersion.headers.get('content-type')).toBe('application/problem+json');
  });

  it("answers what Node's HTTP parser refuses as problem+json with the protocol headers, and closes the connection", async () => {
    /** Sends raw bytes on a fresh connection and reads until the server closes it. */
    const rawExchange = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const url = new URL(BASE);
        const socket = connect(Number(url.port), url.hostname, () => socket.write(bytes));
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (d) => (text += d));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
    const cases: [string, number, string][] = [
      ['POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, 'error.request.invalid'],
      ['GARBAGE\r\n\r\n', 400, 'error.request.invalid'],
      [
        'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        400,
        'error.request.invalid',
      ],
      [
        `GET /v1/auth/profile HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        'error.request.headers_too_large',
      ],
    ];
    for (const [bytes, status, code] of cases) {
      const answer = await rawExchange(bytes);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head!.split('\r\n')[0], bytes.slice(0, 40)).toBe(
        `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}`,
      );
      expect(head).toMatch(/\r\ncontent-type: application\/problem\+json\r\n/i);
      expect(head).toMatch(/\r\nx-svc-protocol-max: 2026-11-01\r\n/i);
      expect(head).toMatch(/\r\nx-svc-protocol-min: /i);
      expect(head).toMatch(/\r\nx-svc-min-client-build: /i);
      expect(head).toMatch(/\r\nconnection: close(\r\n|$)/i);
      expect(JSON.parse(body!)).toMatchObject({ type: 'about:blank', status, code });
    }
  });

  it('refuses Authorization given twice however many lines come between (Node keeps only the first 1,000 or so by default)', async () => {
    const reg = await api('POST', '/v1/auth/register', {
      body: { address: 'many-lines@example.org', password: 'correct horse battery staple' },
    });
    const good = `Bearer ${reg.body.access_token as string}`;
    const status = (lines: string[]) =>
      new Promise<number>((resolve, reject) => {
        const url = new URL(BASE);
        const socket = connect(Number(url.port), url.hostname, () =>
          socket.write(
            `GET /v1/auth/profile HTTP/1.1\r\nHost: x\r\nX-Svc-Protocol: ${V['x-svc-protocol']}\r\nConnection: close\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`,
          ),
        );
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (d) => (text += d));
        socket.on('end', () => resolve(Number(text.split(' ')[1])));
        socket.on('error', reject);
      });
    // Short filler lines, well within the 16 KiB of headers Node admits: the first Authorization is
    // the request's 1,000th line, the second comes 30 lines later. By default Node keeps the first
    // (as the request's Authorization) and drops the second from every view of the request, where
    // a proxy in front may have judged the second.
    const filler = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${p}${i}: 1`);
    expect(
      await status([
        ...filler(996, 'a'),
        `Authorization: ${good}`,
        ...filler(30, 'b'),
        'Authorization: Bearer someone-else',
      ]),
    ).toBe(400);
    // One Authorization after as many lines still authenticates.
    expect(await status([...filler(996, 'a'), `Authorization: ${good}`, ...filler(30, 'b')])).toBe(200);
    expect(await status([...filler(1100, 'a'), `Authorization: ${good}`])).toBe(200);
  });

  it('refuses an oversized chunked JSON body with 413 and a wrong media type with 415', async () => {
    expect(await chunked('/v1/auth/register', 200 * 1024)).toMatchObject({
      status: 413,
      body: { code: 'error.request.too_large' },
    });
    expect((await api('POST', '/v1/auth/register', { raw: 'address=x', type: 'text/plain' })).body.code).toBe(
      'error.request.unsupported_media_type',
    );
  });

  it('takes upload bytes from the socket, refuses bytes past the declared size, and finalizes', async () => {
    const reg = await api('POST', '/v1/auth/register', {
      body: { address: 'uploader@example.org', password: 'correct horse battery staple' },
    });
    const token = reg.body.access_token as string;
    const accountId = (await api('GET', '/v1/auth/profile', { token })).body.account_id as string;
    const device = new TestDevice('laptop', { addedAt: 0 });
    const dir = new TestIdentity('uploader').signDirectory(accountId, 1, [device]);
    expect(
      (await api('PUT', '/v1/devices/directory', { token, raw: dir.slice(), type: 'application/cbor' })).status,
    ).toBe(200);

    const bytes = new TextEncoder().encode('ciphertext!');
    const hash = createHash('sha256').update(bytes).digest('hex');
    const up = await api('POST', '/upload', {
      token,
      body: { declared_size: bytes.length, kind: 'original', device_id: 'laptop' },
    });
    expect(up.status).toBe(201);
    const tooMany = await api('POST', '/upload', {
      token,
      body: { declared_size: 4, kind: 'original', device_id: 'laptop' },
    });
    expect(
      (await api('PUT', `/upload/${tooMany.body.upload_id}`, { token, raw: bytes, type: 'application/octet-stream' }))
        .status,
    ).toBe(413);
    expect(
      (await api('PUT', `/upload/${up.body.upload_id}`, { token, raw: bytes, type: 'application/octet-stream' }))
        .status,
    ).toBe(200);
    const done = await api('POST', `/upload/${up.body.upload_id}/finalize`, { token, body: { content_hash: hash } });
    expect(done).toMatchObject({ status: 200, body: { state: 'Completed' } });
    // used = charged bytes plus open reservations (the refused PUT left its 4-byte session open).
    expect((await api('GET', '/quota', { token })).body).toMatchObject({ used: bytes.length + 4, reserved: 4 });
  });
});
