import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { testServer, VERSION, type TestServer } from '@strongroom/tests';

/**
 * Hono's default router tries its RegExpRouter and silently falls back to the TrieRouter when one
 * path pattern is beyond it (a static path beside a parameter at the same place, say). The fallback
 * costs every request, the authenticated GET included, so every route must stay within it.
 */
describe('routing', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await testServer();
  });
  afterAll(() => s.close());

  it('every route the app mounts is one the RegExpRouter can take', () => {
    const routes = (s.app as unknown as { routes: { method: string; path: string }[] }).routes;
    expect(routes.length).toBeGreaterThan(50);
    const router = new RegExpRouter<number>();
    routes.forEach((r, i) => router.add(r.method, r.path, i));
    // The router builds its matchers on the first match; an unsupported pattern throws there.
    expect(() => router.match('GET', '/v1/auth/profile')).not.toThrow();
  });

  it('the app settles on the RegExpRouter once it has answered a request', async () => {
    const r = await s.request('/v1/auth/profile', { headers: { 'x-svc-protocol': VERSION } });
    expect(r.status).toBe(401);
    expect((s.app.router as { name: string }).name).toBe('SmartRouter + RegExpRouter');
  });

  it('still serves the docs page script and assets through the one /docs/:file route', async () => {
    const init = await s.request('/docs/init.js');
    expect(init.status).toBe(200);
    expect(init.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await init.text()).toContain('/openapi.json');
    expect((await s.request('/docs/nope.js')).status).toBe(404);
  });
});
