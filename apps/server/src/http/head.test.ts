import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerUser, testServer, VERSION, type TestServer } from '@strongroom/tests';
import { listen } from './serve-for-test.js';

let s: TestServer;
let net: { base: string; close: () => Promise<void> };
beforeAll(async () => {
  s = await testServer();
  net = await listen(s.app);
});
afterAll(async () => {
  await net.close();
  await s.close();
});

/** HEAD over a real socket, reading the raw response head (fetch would hide nothing, but be sure). */
function head(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; bodyBytes: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(net.base + path, { method: 'HEAD', headers }, (res) => {
      let bodyBytes = 0;
      res.on('data', (chunk: Buffer) => (bodyBytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bodyBytes }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('HEAD', () => {
  it('answers like GET with no body and the Content-Length of the GET body', async () => {
    const u = await registerUser(s.app);
    const cases: [string, Record<string, string>][] = [
      ['/.well-known/svc/server-info', {}],
      ['/openapi.json', {}],
      ['/v1/auth/profile', { 'x-svc-protocol': VERSION, authorization: `Bearer ${u.access_token}` }],
      ['/quota', { 'x-svc-protocol': VERSION }],
      ['/no/such/path', {}],
      ['/docs', {}],
    ];
    for (const [path, headers] of cases) {
      const get = await fetch(net.base + path, { headers });
      const getBytes = (await get.arrayBuffer()).byteLength;
      const h = await head(path, headers);
      expect(h.status, path).toBe(get.status);
      expect(h.bodyBytes, path).toBe(0);
      expect(h.headers['content-length'], path).toBe(String(getBytes));
      expect(h.headers['content-type'], path).toBe(get.headers.get('content-type'));
      expect(h.headers['x-svc-protocol-max'], path).toBe(get.headers.get('x-svc-protocol-max'));
    }
  });

  it('on a path that takes only other methods is the 405 a GET gets, with Allow', async () => {
    const h = await head('/v1/auth/register', { 'x-svc-protocol': VERSION });
    expect(h.status).toBe(405);
    expect(h.headers.allow).toBe('POST');
    expect(Number(h.headers['content-length'])).toBeGreaterThan(0);
  });
});
