import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from '../config.js';
import { VERSION, registerUser, testServer, type TestServer } from '@strongroom/tests';

const APP = 'https://app.example.org';
const OTHER = 'https://evil.example.net';

let s: TestServer | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

/** A browser's preflight for a request with these headers. */
const preflight = (origin: string, method = 'GET', headers = 'authorization, x-svc-protocol') => ({
  method: 'OPTIONS',
  headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
});

describe('CORS (SVC_CORS_ORIGINS)', () => {
  it("answers an allowed origin's preflight with what it may send, and nothing else happens", async () => {
    s = await testServer({ SVC_CORS_ORIGINS: `${APP}, http://localhost:5173` });
    const r = await s.app.request(
      '/v1/auth/sessions',
      preflight(APP, 'GET', 'Authorization, X-Svc-Protocol, X-Svc-Act-As, Content-Type, X-Evil'),
    );
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-origin')).toBe(APP);
    expect(r.headers.get('access-control-allow-methods')).toContain('DELETE');
    const allowed = r.headers.get('access-control-allow-headers')!.split(', ');
    expect(allowed).toEqual(['authorization', 'x-svc-protocol', 'x-svc-act-as', 'content-type']);
    expect(r.headers.get('access-control-max-age')).toMatch(/^\d+$/);
    expect(r.headers.get('vary')).toContain('Origin');
    expect(r.headers.get('access-control-allow-credentials')).toBeNull();
    // The second configured origin works the same way.
    expect(
      (
        await s.app.request('/v1/auth/register', preflight('http://localhost:5173', 'POST', 'content-type'))
      ).headers.get('access-control-allow-origin'),
    ).toBe('http://localhost:5173');
  });

  it('marks actual answers (errors included) readable by the allowed origin and exposes the protocol headers', async () => {
    s = await testServer({ SVC_CORS_ORIGINS: APP });
    const user = await registerUser(s.app);
    const ok = await s.app.request('/v1/auth/sessions', {
      headers: { origin: APP, authorization: `Bearer ${user.access_token}`, 'x-svc-protocol': VERSION },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(APP);
    const exposed = ok.headers.get('access-control-expose-headers')!.toLowerCase().split(', ');
    expect(exposed).toEqual(
      expect.arrayContaining(['x-svc-protocol-min', 'x-svc-protocol-max', 'x-svc-min-client-build']),
    );
    // What a browser app's downloads and sign-in read: a ranged answer's Content-Range (a client
    // cannot use a 206 without it), its length, Accept-Ranges, the blob's ETag, a redirect's
    // Location and a 401's challenge.
    expect(exposed).toEqual(
      expect.arrayContaining([
        'content-range',
        'content-length',
        'accept-ranges',
        'etag',
        'location',
        'www-authenticate',
      ]),
    );
    const challenged = await s.app.request('/v1/auth/sessions', {
      headers: { origin: APP, 'x-svc-protocol': VERSION },
    });
    expect(challenged.status).toBe(401);
    expect(challenged.headers.get('www-authenticate')).not.toBeNull();
    expect(challenged.headers.get('access-control-expose-headers')!.toLowerCase().split(', ')).toContain(
      'www-authenticate',
    );
    const refused = await s.app.request('/v1/auth/sessions', { headers: { origin: APP } });
    expect(refused.status).toBe(426);
    expect(refused.headers.get('access-control-allow-origin')).toBe(APP);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
  });

  it('lets a browser tus client through: its request headers are allowed, the offset and the length exposed', async () => {
    s = await testServer({ SVC_CORS_ORIGINS: APP });
    const pre = await s.app.request(
      '/upload-tus/01a1fd8c-6900-7768-aa4a-28bfe5bc8363',
      preflight(
        APP,
        'PATCH',
        'authorization, x-svc-protocol, tus-resumable, upload-offset, upload-checksum, content-type, upload-concat',
      ),
    );
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-headers')!.split(', ')).toEqual([
      'authorization',
      'x-svc-protocol',
      'tus-resumable',
      'upload-offset',
      'upload-checksum',
      'content-type',
    ]);
    const creation = await s.app.request(
      '/upload-tus',
      preflight(APP, 'POST', 'tus-resumable, upload-length, upload-metadata'),
    );
    expect(creation.headers.get('access-control-allow-headers')).toBe('tus-resumable, upload-length, upload-metadata');
    const answer = await s.app.request('/upload-tus', {
      method: 'OPTIONS',
      headers: { origin: APP, 'x-svc-protocol': VERSION },
    });
    expect(answer.status).toBe(204);
    const exposed = answer.headers.get('access-control-expose-headers')!.toLowerCase().split(', ');
    expect(exposed).toEqual(
      expect.arrayContaining([
        'upload-offset',
        'upload-length',
        'upload-expires',
        'location',
        'tus-resumable',
        'tus-version',
        'tus-extension',
        'tus-max-size',
        'tus-checksum-algorithm',
      ]),
    );
  });

  it('leaves a record open to any origin as it is: WebFinger keeps Access-Control-Allow-Origin: * for a listed origin too', async () => {
    s = await testServer({ SVC_CORS_ORIGINS: APP });
    for (const origin of [APP, 'https://elsewhere.example']) {
      const r = await s.app.request('/.well-known/webfinger?resource=acct:nobody@127.0.0.1:8080', {
        headers: { origin },
      });
      expect(r.status).toBe(404);
      expect(r.headers.get('access-control-allow-origin'), origin).toBe('*');
    }
  });

  it('gives another origin nothing: its preflight falls through to 405 and its answers carry no grant', async () => {
    s = await testServer({ SVC_CORS_ORIGINS: APP });
    const pre = await s.app.request('/v1/auth/sessions', preflight(OTHER));
    expect(pre.status).toBe(405);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    const r = await s.app.request('/healthz', { headers: { origin: OTHER } });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
    expect(r.headers.get('vary')).toContain('Origin');
  });

  it('is off by default: no preflight answered, no header added', async () => {
    s = await testServer();
    const pre = await s.app.request('/v1/auth/sessions', preflight(APP));
    expect(pre.status).toBe(405);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    expect(
      (await s.app.request('/healthz', { headers: { origin: APP } })).headers.get('access-control-allow-origin'),
    ).toBeNull();
  });

  it("works over a real socket (Node's raw headers, not the Fetch API ones)", async () => {
    s = await testServer({ SVC_CORS_ORIGINS: APP });
    const server = serve({ fetch: s.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const pre = await fetch(`${base}/v1/auth/register`, preflight(APP, 'POST', 'content-type, x-svc-protocol'));
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe(APP);
      expect(pre.headers.get('access-control-allow-headers')).toBe('content-type, x-svc-protocol');
      const health = await fetch(`${base}/healthz`, { headers: { origin: APP } });
      expect(health.status).toBe(200);
      expect(health.headers.get('access-control-allow-origin')).toBe(APP);
      expect(health.headers.get('x-svc-protocol-min')).toBe('2026-03-01');
      expect(await health.json()).toEqual({ status: 'ok' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses to start on a value that is not a list of origins, naming the variable', () => {
    for (const bad of [
      'app.example.org',
      'https://app.example.org/',
      'https://app.example.org/path',
      'ftp://x.example.org',
      '*',
    ]) {
      expect(() => readConfig({ SVC_CORS_ORIGINS: bad })).toThrow(ConfigError);
      expect(() => readConfig({ SVC_CORS_ORIGINS: bad })).toThrow('SVC_CORS_ORIGINS');
    }
    expect(readConfig({ SVC_CORS_ORIGINS: ' https://a.example.org ,http://localhost:3000' }).corsOrigins).toEqual([
      'https://a.example.org',
      'http://localhost:3000',
    ]);
    expect(readConfig({}).corsOrigins).toEqual([]);
  });
});
