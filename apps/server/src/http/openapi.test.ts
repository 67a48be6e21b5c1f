import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, testServer, type TestServer } from '@strongroom/tests';

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
const ops: [string, string, Op][] = [];
beforeAll(async () => {
  s = await testServer();
  doc = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
  for (const [path, item] of Object.entries<Record<string, Op>>(doc.paths))
    for (const [method, op] of Object.entries(item)) ops.push([method, path, op]);
});
afterAll(() => s.close());

const codesAt = (op: Op, status: number): string[] =>
  op.responses[status]?.content?.['application/problem+json']?.schema?.properties?.code?.enum ?? [];
const versioned = (op: Op) => op.parameters?.some((p) => p.$ref === '#/components/parameters/X-Svc-Protocol') ?? false;

describe('the OpenAPI document', () => {
  it('reads as generators need it: binary bodies, Retry-After, portable schemes, closed empty bodies, typed codes', () => {
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
      const empty = op.requestBody?.content['application/json'] as { schema?: any } | undefined;
      if (empty?.schema?.type === 'object' && Object.keys(empty.schema.properties ?? { x: 1 }).length === 0) {
        expect(empty.schema, `${method} ${path}`).toEqual({
          type: 'object',
          properties: {},
          additionalProperties: false,
        });
      }
    }
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
    const ids = ops.map(([, , op]) => op.operationId);
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
      // /metrics takes no session: its Bearer is the operator's SVC_METRICS_TOKEN, refused as a credential.
      if (path === '/metrics') expect(codesAt(op, 401), where).toEqual(['error.auth.invalid_credentials']);
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
      doc.paths[path][method].requestBody.content['application/json'].schema;
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
      expect(doc.paths[path].get.responses['200'].content['application/json'].schema.type, path).toBe('object');
    }
  });
});
