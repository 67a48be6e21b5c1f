import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { TestDevice, TestIdentity } from '@strongroom/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, VERSION, type TestServer } from '@strongroom/tests';
import { answerOf, DocChecker, inlined, operations, type Json, type Operation } from './doc-check.js';
import { mutated, valid } from './schema-arbitrary.js';

// A property-based run over the served OpenAPI document, in the spirit of schemathesis: for every
// operation, fast-check builds requests from the operation's own documented schemas (valid ones and
// ones broken in one place, with and without a token, with right and wrong content types and
// protocol versions), sends them to the real app, and checks every answer against the document:
// no 5xx, no undocumented status or content type, every body matching its schema.
//
// FC_SEED fixes the seed (fast-check prints the seed and path of any failure); FC_RUNS the runs per
// operation.

const RUNS = Number(process.env.FC_RUNS ?? 25);
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

let s: TestServer;
let doc: Json;
let checker: DocChecker;
const admin = new TestDevice('admin');

beforeAll(async () => {
  s = await testServer({ SVC_QUOTA_HARD_BYTES: '100000', SVC_QUOTA_SOFT_BYTES: '' });
  doc = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
  checker = new DocChecker(doc);
});
afterAll(() => s.close());

interface Fixtures {
  token: string;
  sessionToken: string;
  ids: string[];
}

interface Sent {
  url: string;
  init: RequestInit;
}

/** Sends a request and returns what departs from the document (empty when it keeps its promise). */
// FC_TALLY=1 prints the statuses each operation answered, to see what a run reached.
const seen = new Map<string, Map<number, number>>();
async function departures(o: Operation, req: Sent): Promise<string[]> {
  const res = await s.request(req.url, req.init);
  const tally = seen.get(`${o.method} ${o.path}`) ?? new Map<number, number>();
  seen.set(`${o.method} ${o.path}`, tally.set(res.status, (tally.get(res.status) ?? 0) + 1));
  return checker.problems(o, await answerOf(res));
}

function find(method: string, path: string): Operation {
  const o = operations(doc).find((x) => x.method === method && x.path === path);
  if (!o) throw new Error(`${method} ${path} is not in the document`);
  return o;
}

/**
 * One call made the way a client would, checked against the document before its body is handed
 * back: the handlers' outputs meet their schemas on the paths that succeed.
 */
async function checked(
  method: string,
  template: string,
  url: string,
  init: { token?: string; json?: unknown; raw?: Uint8Array; type?: string; version?: string } = {},
) {
  const o = find(method, template);
  const headers: Record<string, string> = {};
  if (template.startsWith('/v1') || template.startsWith('/upload') || template === '/quota')
    headers['x-svc-protocol'] = init.version ?? VERSION;
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  let body: BodyInit | undefined;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers['content-type'] = 'application/json';
  } else if (init.raw) {
    body = init.raw.slice();
    headers['content-type'] = init.type!;
  }
  const answer = await answerOf(await s.request(url, { method, headers, ...(body !== undefined ? { body } : {}) }));
  expect(checker.problems(o, answer), `${method} ${url}`).toEqual([]);
  const text = new TextDecoder().decode(answer.bytes);
  return {
    status: answer.status,
    body: answer.headers.get('content-type')?.includes('json') && text ? JSON.parse(text) : text,
  };
}

/** A signed-in account with a published directory, an album, an open upload and an asset. */
async function fixtures(): Promise<Fixtures> {
  const u = await registerUser(s.app);
  const profile = (await checked('GET', '/v1/auth/profile', '/v1/auth/profile', { token: u.access_token })).body;
  const dir = new TestIdentity(u.address).signDirectory(profile.account_id, 1, [admin]);
  expect(
    (
      await checked('PUT', '/v1/devices/directory', '/v1/devices/directory', {
        token: u.access_token,
        raw: dir,
        type: 'application/cbor',
      })
    ).status,
  ).toBe(200);
  const album = (
    await checked('POST', '/v1/albums', '/v1/albums', { token: u.access_token, json: { device_id: 'admin' } })
  ).body;
  const open = (
    await checked('POST', '/upload', '/upload', {
      token: u.access_token,
      json: { declared_size: 10, kind: 'original', device_id: 'admin', album_id: album.album_id },
    })
  ).body;
  const done = (
    await checked('POST', '/upload', '/upload', {
      token: u.access_token,
      json: { declared_size: 4, kind: 'original', device_id: 'admin' },
    })
  ).body;
  const bytes = new TextEncoder().encode(`b${Math.random()}`.slice(0, 4));
  await checked('PUT', '/upload/{id}', `/upload/${done.upload_id}`, {
    token: u.access_token,
    raw: bytes,
    type: 'application/octet-stream',
  });
  const hash = createHash('sha256').update(bytes).digest('hex');
  const asset = (
    await checked('POST', '/upload/{id}/finalize', `/upload/${done.upload_id}/finalize`, {
      token: u.access_token,
      json: { content_hash: hash },
    })
  ).body;
  return {
    token: u.access_token,
    sessionToken: u.session_token,
    ids: [profile.account_id, u.session_id, album.album_id, open.upload_id, done.upload_id, asset.asset_id, hash],
  };
}

// Characters a path segment carries as they are; `.` and `..` alone are dot segments, which URL
// resolution removes before any server sees them, so they are never ids. Long enough for every id
// the document names (a content hash is 64 characters): a valid value that could never pass this
// filter would make fast-check's generator retry forever, blocking the worker past any timeout.
const SEGMENT = /^[A-Za-z0-9._~-]{1,128}$/;
const safeSegment = (x: string) => SEGMENT.test(x) && x !== '.' && x !== '..';

/** Requests for one operation, read from its documented parameters and body. */
function requests(o: Operation, f: Fixtures): fc.Arbitrary<Sent> {
  const params: Json[] = (o.op.parameters ?? []).map((p: Json) =>
    p.$ref ? doc.components.parameters[p.$ref.split('/').pop()] : p,
  );
  const pathParams = params.filter((p) => p.in === 'path');
  const queryParams = params.filter((p) => p.in === 'query');
  const versioned = params.some((p) => p.in === 'header' && p.name === 'X-Svc-Protocol');
  const secured = (o.op.security ?? []).length > 0;

  const pathArb = fc.tuple(
    ...pathParams.map((p) =>
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...f.ids) },
        { weight: 2, arbitrary: valid(p.schema).map(String).filter(safeSegment) },
        { weight: 1, arbitrary: fc.stringMatching(SEGMENT).filter(safeSegment) },
      ),
    ),
  );
  const queryArb = fc.tuple(
    ...queryParams.map((p) =>
      fc.oneof(
        { weight: 4, arbitrary: valid(p.schema).map((x) => String(x)) },
        { weight: 1, arbitrary: fc.constantFrom(...f.ids) },
        {
          weight: 1,
          arbitrary: mutated(p.schema).map((x) =>
            x === undefined ? undefined : typeof x === 'string' ? x : JSON.stringify(x),
          ),
        },
        { weight: 1, arbitrary: fc.constant(undefined) },
      ),
    ),
  );
  const versionArb = versioned
    ? fc.oneof(
        { weight: 8, arbitrary: fc.constant<string | undefined>(VERSION) },
        {
          weight: 1,
          arbitrary: fc.constantFrom<string | undefined>(
            undefined,
            'garbage',
            '2026-02-30',
            '2099-01-01',
            '2026-01-01',
            '2026-03-01',
          ),
        },
      )
    : fc.constantFrom<string | undefined>(undefined, VERSION);
  const tokenArb = fc.oneof(
    { weight: secured ? 6 : 1, arbitrary: fc.constant<string | undefined>(f.token) },
    { weight: 1, arbitrary: fc.constantFrom<string | undefined>(undefined, 'not-a-token', `${f.token}x`) },
  );
  const bodyArb = bodyRequests(o.op.requestBody);

  return fc
    .record({ path: pathArb, query: queryArb, version: versionArb, token: tokenArb, body: bodyArb })
    .map(({ path, query, version, token, body }) => {
      let i = 0;
      let url = o.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(path[i++]!));
      const search = new URLSearchParams();
      queryParams.forEach((p, k) => query[k] !== undefined && search.set(p.name, query[k]!));
      if (search.size) url += `?${search}`;
      const headers: Record<string, string> = {};
      if (version !== undefined) headers['x-svc-protocol'] = version;
      if (token !== undefined) headers.authorization = `Bearer ${token}`;
      if (body.type !== undefined) headers['content-type'] = body.type;
      return { url, init: { method: o.method, headers, ...(body.bytes !== undefined ? { body: body.bytes } : {}) } };
    });
}

interface BodyChoice {
  type?: string;
  bytes?: BodyInit;
}

function bodyRequests(requestBody: Json | undefined): fc.Arbitrary<BodyChoice> {
  if (!requestBody) return fc.constant({});
  const [type, media] = Object.entries<Json>(requestBody.content)[0]!;
  const wrongType = fc.constantFrom<string | undefined>(
    undefined,
    'text/plain',
    type === 'application/json' ? 'application/cbor' : 'application/json',
  );
  const json = (value: unknown) => JSON.stringify(value) ?? 'null';
  if (type === 'application/json') {
    // Named bodies are read whole: the generators below take one schema, not references.
    const schema = inlined(doc, media.schema) as Json;
    const text = fc.oneof(
      { weight: 5, arbitrary: valid(schema).map(json) },
      { weight: 4, arbitrary: mutated(schema).map(json) },
      { weight: 1, arbitrary: fc.constantFrom('{', '{"a":1,"a":2}', '"\\ud800"', 'x'.repeat(70 * 1024)) },
    );
    const content = fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom<string | undefined>(type, `${type}; charset=utf-8`) },
      { weight: 1, arbitrary: wrongType },
    );
    const withBody = fc.record({ type: content, bytes: text });
    return requestBody.required ? withBody : fc.oneof(withBody, fc.constant({}));
  }
  const bytes = fc.oneof(
    { weight: 6, arbitrary: fc.uint8Array({ maxLength: 64 }) },
    { weight: 1, arbitrary: fc.constant(new Uint8Array(300 * 1024)) },
  );
  return fc.record({
    type: fc.oneof(
      { weight: 6, arbitrary: fc.constant<string | undefined>(type) },
      { weight: 1, arbitrary: wrongType },
    ),
    bytes: bytes.map((b) => b.slice() as Uint8Array<ArrayBuffer>),
  });
}

describe('every operation keeps the promises of the document', () => {
  it('the check itself fails on an answer the document does not promise', async () => {
    const quota = find('GET', '/quota');
    const narrowed = structuredClone(doc);
    delete narrowed.paths['/quota'].get.responses['401'];
    // The body is the named Quota: narrowing that schema narrows the operation's answer.
    narrowed.components.schemas.Quota.required.push('not_a_member');
    const strict = new DocChecker(narrowed);
    const anonymous = await answerOf(await s.request('/quota', { headers: { 'x-svc-protocol': VERSION } }));
    expect(strict.problems({ ...quota, op: narrowed.paths['/quota'].get }, anonymous)).toEqual([
      'undocumented status 401',
    ]);
    expect(checker.problems(quota, anonymous)).toEqual([]);
    const f = await fixtures();
    const mine = await answerOf(
      await s.request('/quota', { headers: { 'x-svc-protocol': VERSION, authorization: `Bearer ${f.token}` } }),
    );
    expect(strict.problems({ ...quota, op: narrowed.paths['/quota'].get }, mine).join()).toMatch(
      /does not match its schema.*not_a_member/,
    );
    expect(checker.problems(quota, { ...mine, headers: new Headers({ 'content-type': 'text/html' }) }).join()).toMatch(
      /answered text\/html/,
    );
    // Answers are checked closed: a member the document does not name is a departure.
    const extra = new TextEncoder().encode(
      JSON.stringify({ ...JSON.parse(new TextDecoder().decode(mine.bytes)), surprise: 1 }),
    );
    expect(checker.problems(quota, { ...mine, bytes: extra }).join()).toMatch(/unevaluated properties/);
    expect(checker.problems(quota, mine)).toEqual([]);
  });

  it('covers every operation the document lists', () => {
    expect(operations(doc).length).toBeGreaterThan(30);
  });

  it('answers every generated request as documented', { timeout: 240_000 }, async () => {
    const failures: string[] = [];
    for (const o of operations(doc)) {
      const f = await fixtures();
      try {
        await fc.assert(
          fc.asyncProperty(requests(o, f), async (req) => {
            const found = await departures(o, req);
            if (found.length) throw new Error(`${req.init.method} ${req.url}: ${found.join('; ')}`);
          }),
          { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) },
        );
      } catch (error) {
        // fast-check keeps the property's own error as the cause: without it a failure says only "failed".
        failures.push(
          `${o.method} ${o.path}\n${String((error as Error).message).slice(0, 1500)}\ncause: ${String((error as { cause?: unknown }).cause).slice(0, 800)}`,
        );
      }
    }
    if (process.env.FC_TALLY) for (const [op, t] of seen) console.log(op, JSON.stringify(Object.fromEntries(t)));
    expect(failures, failures.join('\n\n')).toEqual([]);
  });
});

describe('methods a path does not list', () => {
  it('answer 405 problem+json with Allow naming exactly the documented methods', async () => {
    const all = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
    for (const [template, item] of Object.entries<Json>(doc.paths)) {
      const url = template.replace(/\{[^}]+\}/g, '01a1fd8c-6900-7768-aa4a-28bfe5bc8363');
      const listed = Object.keys(item).map((m) => m.toUpperCase());
      for (const method of all.filter((m) => !listed.includes(m))) {
        const res = await s.request(url, { method, headers: { 'x-svc-protocol': VERSION } });
        expect(res.status, `${method} ${template}`).toBe(405);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        // HEAD is served for every GET, and the document lists it there: Allow names exactly those methods.
        expect(listed.includes('HEAD'), template).toBe(listed.includes('GET'));
        const allowed = listed;
        expect(res.headers.get('allow')!.split(', ').sort(), `${method} ${template}`).toEqual(allowed.sort());
        expect((await res.json()).code).toBe('error.request.method_not_allowed');
      }
    }
  });
});

describe('the answers of the ordinary flows match their schemas', () => {
  it('profile, sessions, quota, directory, albums, uploads, assets and the public records', async () => {
    const f = await fixtures();
    const [, sessionId, albumId, openUpload, , assetId] = f.ids as [string, string, string, string, string, string];
    const t = { token: f.token };
    for (const path of [
      '/.well-known/svc/server-info',
      '/.well-known/svc/revoked-jti',
      '/.well-known/svc/deprecation',
      '/.well-known/svc/attestation-keys',
    ]) {
      expect((await checked('GET', path, path)).status).toBe(200);
    }
    expect(
      (await checked('PATCH', '/v1/auth/profile', '/v1/auth/profile', { ...t, json: { display_name: '  Ada  ' } })).body
        .display_name,
    ).toBe('Ada');
    expect((await checked('GET', '/v1/auth/sessions', '/v1/auth/sessions', t)).body.sessions).toHaveLength(1);
    expect((await checked('GET', '/quota', '/quota', t)).status).toBe(200);
    expect((await checked('GET', '/v1/devices/directory', '/v1/devices/directory', t)).status).toBe(200);
    expect((await checked('GET', '/v1/albums/{album_id}/upgrade', `/v1/albums/${albumId}/upgrade`, t)).body.phase).toBe(
      'normal',
    );
    expect((await checked('GET', '/upload/{id}', `/upload/${openUpload}`, t)).body.state).toBe('Pending');
    expect((await checked('DELETE', '/upload/{id}', `/upload/${openUpload}`, t)).body.state).toBe('Cancelled');
    expect((await checked('GET', '/v1/assets/{id}', `/v1/assets/${assetId}`, t)).body.state).toBe('live');
    expect(
      (
        await checked('PUT', '/v1/assets/{id}/metadata', `/v1/assets/${assetId}/metadata`, {
          ...t,
          raw: new Uint8Array(8),
          type: 'application/octet-stream',
        })
      ).status,
    ).toBe(200);
    expect((await checked('POST', '/v1/assets/{id}/trash', `/v1/assets/${assetId}/trash`, t)).body.state).toBe(
      'trashed',
    );
    expect((await checked('POST', '/v1/assets/{id}/restore', `/v1/assets/${assetId}/restore`, t)).body.state).toBe(
      'live',
    );
    await checked('POST', '/v1/assets/{id}/trash', `/v1/assets/${assetId}/trash`, t);
    expect((await checked('POST', '/v1/trash/empty', '/v1/trash/empty', t)).body.purged).toBe(1);
    expect(
      (await checked('POST', '/v1/auth/refresh', '/v1/auth/refresh', { json: { session_token: f.sessionToken } }))
        .status,
    ).toBe(200);
    expect((await checked('POST', '/v1/auth/totp/enroll', '/v1/auth/totp/enroll', t)).body.uri).toMatch(
      /^otpauth:\/\/totp\//,
    );
    expect(
      (await checked('POST', '/v1/auth/logout/all/challenge', '/v1/auth/logout/all/challenge', t)).body.expires_in,
    ).toBe(300);
    expect(
      (await checked('DELETE', '/v1/auth/sessions/{session_id}', `/v1/auth/sessions/${sessionId}`, t)).status,
    ).toBe(204);
    expect((await checked('GET', '/quota', '/quota', t)).status).toBe(401);
  });
});
