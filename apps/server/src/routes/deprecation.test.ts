import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS, runCli } from '../cli.js';
import { readConfig } from '../config.js';
import { call, registerUser, testServer, type TestServer } from '@strongroom/tests';
import { inlined } from '../http/doc-check.js';

const DAY_MS = 86_400_000;
const BUILD_MIN = '2026-03-01';
const BUILD_MAX = '2026-11-01';
const OLD = '2026-05-01';
const NEW_MIN = '2026-06-01';
let s: TestServer;
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  await s.close();
});

const deprecate = (version: string, at: number) =>
  COMMANDS.deprecate!.run(s.deps, [version, new Date(at).toISOString()]);
const protocolHeaders = (h: Headers) => ({ min: h.get('x-svc-protocol-min'), max: h.get('x-svc-protocol-max') });

describe('deprecation announcements (operator CLI)', () => {
  it('refuses an effective instant sooner than the notice period, naming the earliest allowed one, and records nothing', async () => {
    const earliest = s.clock.now() + 90 * DAY_MS;
    await expect(deprecate(NEW_MIN, earliest - 1000)).rejects.toThrow(
      new RegExp(`error.deprecation.too_soon.*${new Date(earliest).toISOString()}`),
    );
    await expect(deprecate('2026-13-01', earliest)).rejects.toThrow(/error.deprecation.invalid/);
    await expect(deprecate('2026-12-01', earliest)).rejects.toThrow(/newer than this server's Max/);
    await expect(COMMANDS.deprecate!.run(s.deps, [NEW_MIN, 'next tuesday'])).rejects.toThrow(/RFC 3339/);
    expect((await call(s.app, 'GET', '/.well-known/svc/deprecation', { version: null })).body.announcements).toEqual(
      [],
    );
  });

  it('refuses impossible calendar instants instead of rolling them over, and records nothing', async () => {
    const run = (when: string) => COMMANDS.deprecate!.run(s.deps, [NEW_MIN, when]);
    for (const when of [
      '2027-02-30T00:00:00Z',
      '2027-06-01T24:00:00Z',
      '2026-13-01T00:00:00Z',
      '2027-06-01T23:60:00Z',
      '2027-06-01T23:59:60Z',
      '2027-06-31T00:00:00Z',
      '2027-06-01T00:00:00+24:00',
      '2027-02-29T00:00:00Z',
    ]) {
      await expect(run(when), when).rejects.toThrow(/RFC 3339/);
    }
    expect((await call(s.app, 'GET', '/.well-known/svc/deprecation', { version: null })).body.announcements).toEqual(
      [],
    );
    // A real date with an offset is the instant it names.
    expect(await run('2028-02-29T01:30:00+02:00')).toContain('from 2028-02-28T23:30:00.000Z');
  });

  it('runs as a real command against the database, with a clear message when too soon', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strongroom-deprecate-'));
    try {
      const env = { SVC_DATA_DIR: dir, SVC_DEPRECATION_NOTICE_S: '3600' };
      expect((await runCli(['init'], env)).code).toBe(0);
      const soon = await runCli(['deprecate', NEW_MIN, new Date(Date.now() + 60_000).toISOString()], env);
      expect(soon).toMatchObject({
        code: 1,
        out: expect.stringMatching(
          /^error: error.deprecation.too_soon: effective_at must be at least the notice period \(3600 s\)/,
        ),
      });
      const ok = await runCli(['deprecate', NEW_MIN, new Date(Date.now() + 2 * 3600_000).toISOString()], env);
      expect(ok).toMatchObject({ code: 0, out: expect.stringContaining(`minimum protocol version is ${NEW_MIN}`) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the window follows announcements as time passes', () => {
  it('publishes the announcement, warns old clients, then from the effective instant refuses their writes and admits their reads', async () => {
    const u = await registerUser(s.app);
    const announcedAt = s.clock.now();
    const effectiveAt = announcedAt + 90 * DAY_MS;
    expect(await deprecate(NEW_MIN, effectiveAt)).toContain(NEW_MIN);

    // Both records show it at once.
    const record = await call(s.app, 'GET', '/.well-known/svc/deprecation', { version: null });
    expect(record).toMatchObject({ status: 200 });
    expect(record.body).toEqual({
      protocol_version: { min: BUILD_MIN, max: BUILD_MAX },
      min_client_build: '1',
      announcements: [
        {
          min_protocol_version: NEW_MIN,
          effective_at: new Date(effectiveAt).toISOString(),
          announced_at: new Date(announcedAt).toISOString(),
        },
      ],
    });
    const info = await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null });
    expect(info.body.protocol_version).toEqual({ min: BUILD_MIN, max: BUILD_MAX });
    expect(info.body.min_protocol_version).toEqual([
      { min_protocol_version: NEW_MIN, effective_at: new Date(effectiveAt).toISOString() },
    ]);

    // Before the instant: the old client still writes, and every answer says when that ends.
    const sunset = new Date(effectiveAt).toUTCString();
    const deprecation = `@${Math.floor(announcedAt / 1000)}`;
    const read = await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token, version: OLD });
    expect(read.status).toBe(200);
    expect({ d: read.headers.get('deprecation'), s: read.headers.get('sunset') }).toEqual({
      d: deprecation,
      s: sunset,
    });
    expect(sunset).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    const refused = await call(s.app, 'PATCH', '/v1/auth/profile', {
      token: 'not-a-token',
      version: OLD,
      body: { display_name: 'x' },
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('sunset')).toBe(sunset); // errors carry it too
    // So does every other answer to that client: the router's 404 and 405, public records, health probes.
    for (const [method, path] of [
      ['GET', '/v1/nothing-here'],
      ['DELETE', '/quota'],
      ['GET', '/.well-known/svc/server-info'],
      ['GET', '/healthz'],
      ['GET', '/openapi.json'],
    ] as const) {
      const other = await s.app.request(path, { method, headers: { 'x-svc-protocol': OLD } });
      expect({ path, d: other.headers.get('deprecation'), s: other.headers.get('sunset') }).toEqual({
        path,
        d: deprecation,
        s: sunset,
      });
    }
    // A malformed version is warned of nothing (its request is refused as unsupported where versions count).
    expect(
      (await s.app.request('/healthz', { headers: { 'x-svc-protocol': '2026-02-30' } })).headers.get('sunset'),
    ).toBeNull();
    // A current client is not warned.
    const current = await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token });
    expect([current.headers.get('deprecation'), current.headers.get('sunset')]).toEqual([null, null]);

    // One millisecond before: unchanged.
    s.clock.set(effectiveAt - 1);
    const pair = (
      await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token }, version: OLD })
    ).body;
    const before = await call(s.app, 'PATCH', '/v1/auth/profile', {
      token: pair.access_token,
      version: OLD,
      body: { display_name: 'Ada' },
    });
    expect(before.status).toBe(200);
    expect(protocolHeaders(before.headers)).toEqual({ min: BUILD_MIN, max: BUILD_MAX });

    // At the instant: the Min is the announced one everywhere, computed from time alone.
    s.clock.set(effectiveAt);
    const write = await call(s.app, 'PATCH', '/v1/auth/profile', {
      token: pair.access_token,
      version: OLD,
      body: { display_name: 'Bea' },
    });
    expect(write).toMatchObject({
      status: 426,
      body: { code: 'error.protocol.below_min', supported_min: NEW_MIN, supported_max: BUILD_MAX },
    });
    expect(protocolHeaders(write.headers)).toEqual({ min: NEW_MIN, max: BUILD_MAX });
    const stillReads = await call(s.app, 'GET', '/v1/auth/profile', { token: pair.access_token, version: OLD });
    expect(stillReads).toMatchObject({ status: 200, body: { display_name: 'Ada' } });
    expect(protocolHeaders(stillReads.headers).min).toBe(NEW_MIN);
    expect(stillReads.headers.get('deprecation')).toBeNull();
    // Signing in and refreshing stay open to the old client; the new Min writes.
    expect(
      (await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token }, version: OLD }))
        .status,
    ).toBe(200);
    expect(
      (
        await call(s.app, 'PATCH', '/v1/auth/profile', {
          token: pair.access_token,
          version: NEW_MIN,
          body: { display_name: 'Cy' },
        })
      ).status,
    ).toBe(200);
    // Unknown paths and the records carry the new Min too.
    expect(protocolHeaders((await call(s.app, 'GET', '/v1/nothing-here')).headers).min).toBe(NEW_MIN);
    const after = await call(s.app, 'GET', '/.well-known/svc/server-info', { version: null });
    expect(after.body).toMatchObject({ protocol_version: { min: NEW_MIN, max: BUILD_MAX }, min_protocol_version: [] });
    expect((await call(s.app, 'GET', '/.well-known/svc/deprecation', { version: null })).body).toMatchObject({
      protocol_version: { min: NEW_MIN, max: BUILD_MAX },
      announcements: [{ min_protocol_version: NEW_MIN }],
    });
  });

  it('a Min announced through another process (straight into the store) is enforced at its instant without a restart', async () => {
    const u = await registerUser(s.app);
    // Served once, so this process holds a cached list from before the announcement.
    expect((await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token, version: OLD })).status).toBe(200);
    const effectiveAt = s.clock.now() + 90 * DAY_MS;
    const r = await s.deps.stores.deprecations.announceDeprecation(
      { minProtocolVersion: NEW_MIN, announcedAt: s.clock.now(), effectiveAt },
      { build: { min: BUILD_MIN, max: BUILD_MAX }, noticeMs: 90 * DAY_MS },
    );
    expect(r.ok).toBe(true);
    s.clock.set(effectiveAt);
    const pair = (
      await call(s.app, 'POST', '/v1/auth/refresh', { body: { session_token: u.session_token }, version: OLD })
    ).body;
    expect(
      (
        await call(s.app, 'PATCH', '/v1/auth/profile', {
          token: pair.access_token,
          version: OLD,
          body: { display_name: 'x' },
        })
      ).body.code,
    ).toBe('error.protocol.below_min');
  });
});

describe('the hot path', () => {
  it('reads no announcements per request: one shared moment until a re-read is due', async () => {
    const u = await registerUser(s.app);
    const store = s.deps.stores.deprecations;
    const list = store.listDeprecations.bind(store);
    let reads = 0;
    store.listDeprecations = () => (reads++, list());
    for (let i = 0; i < 200; i++)
      expect((await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token })).status).toBe(200);
    expect(reads).toBe(0);
    s.clock.advance(s.deps.deprecations.refreshMs);
    for (let i = 0; i < 20; i++) await call(s.app, 'GET', '/v1/auth/profile', { token: u.access_token });
    expect(reads).toBe(1); // one background re-read, shared
  });
});

describe('configuration and the API reference', () => {
  it('SVC_DEPRECATION_NOTICE_S is whole seconds, 90 days by default; a bad value names the variable', () => {
    expect(readConfig({}).deprecationNoticeMs).toBe(90 * DAY_MS);
    expect(readConfig({ SVC_DEPRECATION_NOTICE_S: '60' }).deprecationNoticeMs).toBe(60_000);
    for (const bad of ['abc', '-5', '1.5', '0'])
      expect(() => readConfig({ SVC_DEPRECATION_NOTICE_S: bad })).toThrow(/SVC_DEPRECATION_NOTICE_S/);
  });
  it("declares the records' shapes and the finalize receipt in /openapi.json", async () => {
    const doc = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
    const ok = (path: string, method = 'get') =>
      inlined(doc, doc.paths[path][method].responses['200'].content['application/json'].schema);
    expect(ok('/.well-known/svc/deprecation').required).toEqual([
      'protocol_version',
      'min_client_build',
      'announcements',
    ]);
    expect(ok('/.well-known/svc/attestation-keys').properties.history.items.required).toEqual([
      'seq',
      'kid',
      'jwk',
      'added_at',
      'retired_at',
      'prev',
      'hash',
      'sig',
    ]);
    expect(ok('/.well-known/svc/server-info').properties.min_protocol_version.items.required).toEqual([
      'min_protocol_version',
      'effective_at',
    ]);
    expect(ok('/upload/{id}/finalize', 'post').required).toContain('receipt');
  });
});
