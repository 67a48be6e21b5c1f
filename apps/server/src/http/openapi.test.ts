import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, registerUser, testServer, VERSION, type TestServer } from '@strongroom/tests';
import { answerOf, DocChecker, deref, operations } from './doc-check.js';

// The served document, checked by an independent validator and against the rules every operation
// must follow so that a generated client can type everything it meets.

type Op = {
  operationId?: string;
  security?: unknown[];
  parameters?: { $ref?: string; name?: string; in?: string }[];
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { description: string; content?: Record<string, { schema?: any }> }>;
};

let s: TestServer;
let doc: any;
/** Every operation but the HEADs, which answer as their GET does without a body. */
const ops: [string, string, Op][] = [];
const heads: [string, string, Op][] = [];
beforeAll(async () => {
  s = await testServer();
  doc = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
  for (const [path, item] of Object.entries<Record<string, Op>>(doc.paths))
    for (const [method, op] of Object.entries(item)) (method === 'head' ? heads : ops).push([method, path, op]);
});
afterAll(() => s.close());

const codesAt = (op: Op, status: number): string[] =>
  op.responses[status]?.content?.['application/problem+json']?.schema?.properties?.code?.enum ?? [];
const versioned = (op: Op) => op.parameters?.some((p) => p.$ref === '#/components/parameters/X-Svc-Protocol') ?? false;

describe('the OpenAPI document', () => {
  it('reads as generators need it: binary bodies, Retry-After, portable schemes, closed empty bodies, typed codes', () => {
    let bodiless = 0;
    // A non-JSON answer is binary, or generated clients parse CBOR as JSON and throw.
    const directory = doc.paths['/v1/devices/directory'].get.responses['200'].content['application/cbor'].schema;
    expect(directory).toMatchObject({ type: 'string', format: 'binary', contentMediaType: 'application/cbor' });
    for (const [method, path, op] of ops) {
      for (const [type, media] of Object.entries(op.responses['200']?.content ?? {})) {
        if (!/json$/.test(type)) expect(media.schema?.format, `${method} ${path} ${type}`).toBe('binary');
      }
      // Every status that tells the client to come back later declares Retry-After.
      for (const status of ['429', '503']) {
        const r = op.responses[status] as { headers?: Record<string, unknown> } | undefined;
        if (r)
          expect(r.headers?.['Retry-After'], `${method} ${path} ${status}`).toEqual({
            $ref: '#/components/headers/Retry-After',
          });
      }
      // A bodiless POST takes a closed empty object, never an open map.
      const taken = op.requestBody?.content['application/json'] as { schema?: any } | undefined;
      const empty = taken && deref(doc, taken.schema);
      if (empty?.type === 'object' && Object.keys(empty.properties ?? { x: 1 }).length === 0) {
        bodiless++;
        expect(empty, `${method} ${path}`).toMatchObject({
          type: 'object',
          properties: {},
          additionalProperties: false,
        });
      }
    }
    expect(bodiless).toBeGreaterThan(3);
    expect(doc.paths['/v1/auth/login'].post.responses['429'].headers['Retry-After']).toBeDefined();
    // Scheme names outside the IANA registry are described as the Authorization header's value.
    expect(doc.components.securitySchemes.upload).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
    });
    expect(doc.components.securitySchemes.svcCapability).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
    });
    expect(doc.components.schemas.Problem.properties.code.enum).toEqual(
      expect.arrayContaining(['error.auth.session_invalid', 'error.quota.exceeded']),
    );
  });

  it('passes @apidevtools/swagger-parser validation (OpenAPI 3.1 schema and references)', async () => {
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
    // The validator is not a rubber stamp: a dangling reference fails it.
    const broken = structuredClone(doc);
    broken.paths['/quota'].get.responses['200'].content['application/json'].schema = {
      $ref: '#/components/schemas/Nothing',
    };
    await expect(SwaggerParser.validate(broken)).rejects.toThrow();
  });

  it('names every operation uniquely and gives every one a security entry', () => {
    expect(ops.length).toBeGreaterThan(30);
    const ids = [...ops, ...heads].map(([, , op]) => op.operationId);
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z0-9]+$/);
    expect(new Set(ids).size).toBe(ids.length);
    for (const [method, path, op] of ops) {
      expect(op.security, `${method} ${path}`).toBeInstanceOf(Array);
      // A token route takes the bearer token; the guest upload routes also take a one-drop upload token.
      if (op.security!.length > 0) expect(op.security).toContainEqual({ bearer: [] });
    }
  });

  it('lists WWW-Authenticate on every 401, and Cache-Control on every answer that hands out a token', () => {
    let tokenAnswers = 0;
    for (const [method, path, op] of ops) {
      const responses = op.responses as Record<string, { headers?: Record<string, unknown> }>;
      if (responses['401'])
        expect(Object.keys(responses['401'].headers ?? {}), `${method} ${path} 401`).toContain('WWW-Authenticate');
      const hands =
        /^\/v1\/auth\/(register|login|login\/verify-totp|login\/recover-totp|refresh|password|oidc\/complete)$/.test(
          path,
        ) && method === 'post';
      if (!hands) continue;
      tokenAnswers++;
      expect(Object.keys(responses['200']?.headers ?? {}), `${method} ${path} 200`).toContain('Cache-Control');
    }
    expect(tokenAnswers).toBe(7);
  });

  it('gives every body a schema, and every problem its codes', () => {
    for (const [method, path, op] of ops) {
      for (const [status, r] of Object.entries(op.responses)) {
        const where = `${method} ${path} ${status}`;
        expect(r.description, where).toBeTruthy();
        if (status === '204' || status.startsWith('3')) {
          expect(r.content, where).toBeUndefined();
          continue;
        }
        // One body per answer; a blob's bytes may instead come as JSON when asked (`?as=url`).
        const types = Object.keys(r.content ?? {});
        if (types.length === 2) expect(types, where).toEqual(['application/octet-stream', 'application/json']);
        else expect(types, where).toHaveLength(1);
        for (const media of Object.values(r.content!)) expect(media.schema, where).toBeTruthy();
        if (Number(status) >= 400) {
          expect(Object.keys(r.content!), where).toEqual(['application/problem+json']);
          expect(codesAt(op, Number(status)).length, where).toBeGreaterThan(0);
          expect(r.content!['application/problem+json']!.schema.properties.status).toEqual({ const: Number(status) });
        }
      }
    }
  });

  it('documents the refusals each kind of operation can meet where it can meet them', () => {
    for (const [method, path, op] of ops) {
      const where = `${method} ${path}`;
      // /metrics takes no session: its gate is the operator's SVC_METRICS_TOKEN, and this server sets none.
      if (path === '/metrics') expect(op.responses['401'], where).toBeUndefined();
      else if (op.security!.length > 0)
        expect(codesAt(op, 401), where).toEqual(
          expect.arrayContaining(['error.auth.session_invalid', 'error.auth.unavailable']),
        );
      if (versioned(op)) expect(codesAt(op, 426), where).toContain('error.protocol.unsupported');
      // The OIDC callback is reached by a browser coming back from the provider: it carries no protocol header.
      if (
        (path.startsWith('/v1') && path !== '/v1/auth/oidc/callback') ||
        path.startsWith('/upload') ||
        path === '/quota'
      )
        expect(versioned(op), where).toBe(true);
      if (path.includes('{')) expect(codesAt(op, 404), where).toContain('error.not_found');
      if (op.requestBody) expect(codesAt(op, 415), where).toContain('error.request.unsupported_media_type');
      if (op.requestBody?.content['application/json']) {
        expect(codesAt(op, 400), where).toContain('error.request.invalid');
        expect(codesAt(op, 413), where).toContain('error.request.too_large');
      }
    }
    // Route-specific statuses follow the route's own mapping, not the global table.
    const byId = new Map(ops.map(([, , op]) => [op.operationId, op]));
    expect(codesAt(byId.get('postAuthReauthenticate')!, 403)).toContain('error.auth.invalid_credentials');
    expect(codesAt(byId.get('postAuthReauthenticate')!, 401)).not.toContain('error.auth.invalid_credentials');
    expect(codesAt(byId.get('postAuthTotpDisable')!, 400)).toContain('error.auth.invalid_code');
    expect(codesAt(byId.get('postAuthLoginVerifyTotp')!, 401)).toContain('error.auth.invalid_code');
    expect(codesAt(byId.get('postAuthLogin')!, 426)).not.toContain('error.protocol.below_min');
    expect(codesAt(byId.get('postAlbums')!, 426)).toContain('error.protocol.below_min');
  });

  it('states the account rules in the request schemas', () => {
    const body = (path: string, method: string) =>
      deref(doc, doc.paths[path][method].requestBody.content['application/json'].schema);
    const register = body('/v1/auth/register', 'post').properties;
    expect(register.password).toMatchObject({ type: 'string', minLength: 12, maxLength: 1024 });
    expect(register.address).toMatchObject({ type: 'string', maxLength: 254 });
    const address = new RegExp(register.address.pattern, 'u');
    for (const ok of ['a@b.co', '  x.y+z@example.org ', 'ü@bücher.de']) expect(address.test(ok), ok).toBe(true);
    for (const bad of ['a@b', 'no at.all', 'a@@b.c', 'a b@c.d', 'a\u0001@b.cd'])
      expect(address.test(bad), bad).toBe(false);
    expect(body('/v1/auth/password', 'post').properties.new_password).toMatchObject({ minLength: 12, maxLength: 1024 });
    expect(body('/v1/auth/login', 'post').properties.password).toEqual({ type: 'string' });
    const display = body('/v1/auth/profile', 'patch').properties.display_name.anyOf.find(
      (s: any) => s.type === 'string',
    );
    const name = new RegExp(display.pattern, 'u');
    for (const ok of ['', '   ', 'Ada', ' Ada Lovelace\t', '😀'.repeat(128), ` ${'a'.repeat(128)} `])
      expect(name.test(ok), ok).toBe(true);
    for (const bad of ['a'.repeat(129), 'a\u0000b', 'tab\tinside', 'a\u0085'])
      expect(name.test(bad), JSON.stringify(bad)).toBe(false);
    expect(body('/upload', 'post').properties.declared_size).toEqual({
      type: 'integer',
      format: 'int64',
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
    });
    expect(doc.paths['/v1/auth/sessions/{session_id}'].delete.parameters[0].schema.pattern).toMatch(
      /^\^\[0-9a-f\]\{8\}/,
    );
  });

  it('states its method rule as the server applies it: HEAD on a GET path answers as GET, never 405', async () => {
    // The document says an unlisted method answers 405, and lists no HEAD; the server answers HEAD on
    // every GET path (spec §10.11: both reads answer HEAD), so the rule must say so.
    const hash = 'a'.repeat(64);
    for (const path of ['/quota', `/v1/blobs/${hash}`, '/.well-known/svc/server-info']) {
      const head = await call(s.app, 'HEAD', path);
      expect(head.status, path).not.toBe(405);
    }
    expect(doc.info.description).toMatch(/HEAD on a path that takes GET answers as GET would/);
  });

  it('describes the public records', () => {
    for (const path of [
      '/.well-known/svc/server-info',
      '/.well-known/svc/revoked-jti',
      '/.well-known/svc/deprecation',
      '/.well-known/svc/attestation-keys',
    ]) {
      const record = deref(doc, doc.paths[path].get.responses['200'].content['application/json'].schema);
      expect(record.type, path).toBe('object');
    }
  });
});

/** Every schema below `schema` (properties, items, the branches of anyOf/oneOf/allOf), with the property name it sits under. */
function* walk(schema: any, name: string | null = null): Generator<[string | null, any]> {
  if (typeof schema !== 'object' || schema === null) return;
  yield [name, schema];
  for (const [key, sub] of Object.entries<any>(schema.properties ?? {})) yield* walk(sub, key);
  if (schema.items) yield* walk(schema.items, name);
  for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])])
    yield* walk(branch, name);
}

/** Every body schema of the document: request and response, with where it is. */
function bodies(document: any): [string, any][] {
  const out: [string, any][] = [];
  for (const o of operations(document)) {
    for (const [type, media] of Object.entries<any>(o.op.requestBody?.content ?? {}))
      out.push([`${o.method} ${o.path} request ${type}`, media.schema]);
    for (const [status, answer] of Object.entries<any>(o.op.responses))
      for (const [type, media] of Object.entries<any>(answer.content ?? {}))
        out.push([`${o.method} ${o.path} ${status} ${type}`, media.schema]);
  }
  return out;
}

/**
 * Why a body schema would give a generator an anonymous type, or null when it names one: a body is
 * a `$ref` to a named schema, or bytes (`format: binary`), or a problem narrowed to the statuses and
 * codes of its operation (`allOf: [Problem]` with only `const`/`enum` on members Problem declares).
 */
function anonymous(document: any, schema: any): string | null {
  if (typeof schema?.$ref === 'string')
    return schema.$ref.startsWith('#/components/schemas/') && deref(document, schema)
      ? null
      : `refers to ${schema.$ref}`;
  if (schema?.type === 'string' && schema.format === 'binary') return null;
  const [base, ...more] = schema?.allOf ?? [];
  if (base?.$ref === '#/components/schemas/Problem' && more.length === 0) {
    const declared = deref(document, base).properties;
    for (const [key, narrowed] of Object.entries<any>(schema.properties ?? {})) {
      if (!(key in declared)) return `adds the member ${key} to Problem`;
      if (Object.keys(narrowed).some((k) => k !== 'const' && k !== 'enum')) return `redefines Problem's ${key}`;
    }
    return null;
  }
  return `an inline schema: ${JSON.stringify(schema).slice(0, 120)}`;
}

/** Names that say a property counts bytes. */
const BYTE_NAME = /bytes|size|offset|quota|^used$|^reserved$|_limit$|^upload_length$/;

describe('the reference names what a generator makes types of', () => {
  it('names every request and response body as a component schema', () => {
    const found = bodies(doc);
    expect(found.length).toBeGreaterThan(100);
    const unnamed = found.flatMap(([where, schema]) => {
      const why = anonymous(doc, schema);
      return why === null ? [] : [`${where}: ${why}`];
    });
    expect(unnamed).toEqual([]);
    // The names an app developer looks for.
    for (const name of ['Quota', 'SyncPage', 'SyncChange', 'Asset', 'Album', 'Link', 'Profile', 'Session', 'Upload'])
      expect(doc.components.schemas[name], name).toMatchObject({ type: 'object' });
    expect(doc.paths['/quota'].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Quota',
    });
    // The check is not a rubber stamp: an inline object body is caught.
    const inline = structuredClone(doc);
    inline.paths['/quota'].get.responses['200'].content['application/json'].schema = deref(
      doc,
      doc.paths['/quota'].get.responses['200'].content['application/json'].schema,
    );
    expect(bodies(inline).filter(([, schema]) => anonymous(inline, schema) !== null)).toHaveLength(1);
  });

  it('states every byte count as a 64-bit integer', () => {
    const counts: string[] = [];
    for (const [schemaName, schema] of Object.entries<any>(doc.components.schemas)) {
      for (const [name, sub] of walk(schema)) {
        if (name === null || !BYTE_NAME.test(name) || sub.type === undefined || sub.type === 'null') continue;
        counts.push(`${schemaName}.${name}`);
        expect(sub, `${schemaName}.${name}`).toMatchObject({ type: 'integer', format: 'int64' });
      }
    }
    expect(counts).toEqual(
      expect.arrayContaining([
        'Quota.used',
        'Quota.reserved',
        'Quota.soft_limit',
        'Quota.hard_limit',
        'AssetBlob.size',
        'Upload.declared_size',
        'NewUpload.declared_size',
        'TusUpload.upload_offset',
        'TusUpload.upload_length',
        'Link.max_bytes',
        'Link.accepted_bytes',
        'Drop.declared_size',
      ]),
    );
    // Headers that count bytes too.
    for (const o of operations(doc))
      for (const [status, answer] of Object.entries<any>(o.op.responses))
        for (const name of ['Content-Length', 'Upload-Offset', 'Upload-Length']) {
          const header = answer.headers?.[name];
          if (header)
            expect(header.schema, `${o.method} ${o.path} ${status} ${name}`).toMatchObject({
              type: 'integer',
              format: 'int64',
            });
        }
  });

  it('lists HEAD beside every GET, and the server answers each HEAD as its GET, as documented', async () => {
    const checker = new DocChecker(doc);
    const u = await registerUser(s.app);
    const gets = ops.filter(([method]) => method === 'get');
    expect(gets.length).toBeGreaterThan(15);
    // A value for each path parameter: the answers are mostly 404s, which is what a HEAD must match.
    const fill = (path: string) =>
      path
        .replace('{content_hash}', 'a'.repeat(64))
        .replace('{link_id}', 'A'.repeat(22))
        .replace(/\{[a-z_]+\}/g, '0190b6c6-0000-7000-8000-000000000000');
    for (const [, path, get] of gets) {
      const head = doc.paths[path].head;
      expect(head, `HEAD ${path}`).toBeDefined();
      expect(Object.keys(head.responses), path).toEqual(Object.keys(get.responses));
      expect(head.requestBody).toBeUndefined();
      for (const answer of Object.values<any>(head.responses)) expect(answer.content, path).toBeUndefined();
      const url = fill(path);
      const headers: Record<string, string> = { 'x-svc-protocol': VERSION, authorization: `Bearer ${u.access_token}` };
      const [asGet, asHead] = [
        await s.request(url, { method: 'GET', headers }),
        await s.request(url, { method: 'HEAD', headers }),
      ];
      await asGet.body?.cancel();
      expect(asHead.status, `HEAD ${url}`).toBe(asGet.status);
      const o = operations(doc).find((x) => x.method === 'HEAD' && x.path === path)!;
      expect(checker.problems(o, await answerOf(asHead)), `HEAD ${url}`).toEqual([]);
    }
  });
});

describe('/metrics in the reference', () => {
  it('states the gate the server applies: open without SVC_METRICS_TOKEN, that token with it', async () => {
    // This document's server sets no token: no security, no 401, and the server answers anyone.
    expect(doc.paths['/metrics'].get.security).toEqual([]);
    expect(doc.paths['/metrics'].get.responses['401']).toBeUndefined();
    expect(doc.components.securitySchemes.metricsToken).toBeUndefined();
    expect((await s.request('/metrics')).status).toBe(200);

    const gated = await testServer({ SVC_METRICS_TOKEN: 'a-metrics-token-of-some-length' });
    try {
      const gatedDoc = (await call(gated.app, 'GET', '/openapi.json', { version: null })).body;
      const op = gatedDoc.paths['/metrics'].get;
      expect(op.security).toEqual([{ metricsToken: [] }]);
      expect(gatedDoc.components.securitySchemes.metricsToken).toMatchObject({ type: 'http', scheme: 'bearer' });
      expect(codesAt(op, 401)).toEqual(['error.auth.invalid_credentials']);
      const checker = new DocChecker(gatedDoc);
      const o = operations(gatedDoc).find((x) => x.method === 'GET' && x.path === '/metrics')!;
      const refused = await answerOf(await gated.request('/metrics'));
      expect(refused.status).toBe(401);
      expect(checker.problems(o, refused)).toEqual([]);
      const read = await answerOf(
        await gated.request('/metrics', { headers: { authorization: 'Bearer a-metrics-token-of-some-length' } }),
      );
      expect(read.status).toBe(200);
      expect(checker.problems(o, read)).toEqual([]);
    } finally {
      await gated.close();
    }
  });
});
