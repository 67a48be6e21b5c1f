import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, type TestServer } from '@strongroom/tests';
import { RECORD_MAX_AGE_S } from '../http/public-record.js';

let s: TestServer;
let webfinger: string;
beforeAll(async () => {
  s = await testServer();
  const u = await registerUser(s.app);
  await call(s.app, 'PUT', '/v1/discovery/handle', { token: u.access_token, body: { user: 'pubrec' } });
  await call(s.app, 'PUT', '/v1/discovery/public', { token: u.access_token, body: { published: true } });
  webfinger = `/.well-known/webfinger?resource=${encodeURIComponent('acct:pubrec@127.0.0.1:8080')}`;
});
afterAll(async () => {
  await s.close();
});

/** Every public record a poller re-reads, with the max-age docs/api.md tells it. */
const records = () => [
  { path: '/.well-known/svc/server-info', maxAge: RECORD_MAX_AGE_S.serverInfo },
  { path: '/.well-known/svc/revoked-jti', maxAge: RECORD_MAX_AGE_S.revokedJti },
  { path: '/.well-known/svc/deprecation', maxAge: RECORD_MAX_AGE_S.deprecation },
  { path: '/.well-known/svc/attestation-keys', maxAge: RECORD_MAX_AGE_S.attestationKeys },
  { path: webfinger, maxAge: RECORD_MAX_AGE_S.webfinger },
  { path: '/openapi.json', maxAge: RECORD_MAX_AGE_S.openApi },
];

describe('public records: caching and conditional requests', () => {
  it('each carries Cache-Control with its max-age and a strong ETag, and answers 304 to that tag', async () => {
    for (const { path, maxAge } of records()) {
      const first = await call(s.app, 'GET', path, { version: null });
      expect(first.status, path).toBe(200);
      expect(first.headers.get('cache-control'), path).toBe(`public, max-age=${maxAge}`);
      const tag = first.headers.get('etag');
      expect(tag, path).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
      const again = await call(s.app, 'GET', path, { version: null, headers: { 'if-none-match': tag! } });
      expect(again.status, path).toBe(304);
      expect(again.body, path).toBeNull();
      expect(again.headers.get('etag'), path).toBe(tag);
      expect(again.headers.get('x-svc-protocol-max'), path).toBe('2026-11-01');
      // A weak form of the same tag and a list that holds it match too (RFC 9110 weak comparison).
      expect(
        (await call(s.app, 'GET', path, { version: null, headers: { 'if-none-match': `"other", W/${tag}` } })).status,
        path,
      ).toBe(304);
      // Another tag: the whole record again.
      const other = await call(s.app, 'GET', path, { version: null, headers: { 'if-none-match': '"not-this-one"' } });
      expect(other.status, path).toBe(200);
      expect(other.body, path).toEqual(first.body);
    }
  });
  it('the tag follows the bytes: a record that changes gets a new tag, and the old one no longer answers 304', async () => {
    const before = await call(s.app, 'GET', '/.well-known/svc/deprecation', { version: null });
    await s.deps.deprecations.announce('2026-06-01', s.deps.clock.now() + 200 * 86_400_000);
    const after = await call(s.app, 'GET', '/.well-known/svc/deprecation', {
      version: null,
      headers: { 'if-none-match': before.headers.get('etag')! },
    });
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
  });
  it('WebFinger keeps its open CORS header on 200 and 304', async () => {
    const first = await call(s.app, 'GET', webfinger, { version: null });
    expect(first.headers.get('access-control-allow-origin')).toBe('*');
    expect(first.headers.get('content-type')).toBe('application/jrd+json');
    const again = await call(s.app, 'GET', webfinger, {
      version: null,
      headers: { 'if-none-match': first.headers.get('etag')! },
    });
    expect(again.status).toBe(304);
    expect(again.headers.get('access-control-allow-origin')).toBe('*');
  });
  it('HEAD of a record answers its headers without a body', async () => {
    const head = await s.app.request('/.well-known/svc/server-info', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toMatch(/^"/);
    expect(await head.text()).toBe('');
  });
});
