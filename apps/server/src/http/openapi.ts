import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { AnyRoute } from './route.js';
import { STATUS, type ProblemCode } from './problem.js';

function schema(s: v.GenericSchema | undefined): Record<string, unknown> | undefined {
  if (!s) return undefined;
  // `errorMode: 'ignore'` keeps the document whole where a validation has no JSON Schema form.
  const out = toJsonSchema(s, { errorMode: 'ignore' }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

/**
 * The OpenAPI 3.1 document, generated from the same route definitions and valibot schemas that
 * validate requests, so the reference cannot drift from the behaviour.
 */
export function openApiDocument(routes: readonly AnyRoute[], info: { baseUrl: string; window: { min: string; max: string } }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:([a-z_]+)/g, '{$1}');
    const parameters: unknown[] = [];
    for (const m of r.path.matchAll(/:([a-z_]+)/g)) parameters.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
    if (r.query) {
      const q = schema(r.query as v.GenericSchema) as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, s] of Object.entries(q.properties ?? {})) parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema: s });
    }
    if (r.versioned ?? true) {
      parameters.push({ name: 'X-Svc-Protocol', in: 'header', required: true, schema: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' } });
    }
    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(r.responses)) {
      const body = schema(spec.schema);
      responses[status] = { description: spec.description, ...(body ? { content: { [spec.contentType ?? 'application/json']: { schema: body } } } : {}) };
    }
    for (const code of r.errors ?? []) {
      const status = String(STATUS[code as ProblemCode] ?? 400);
      const entry = (responses[status] ??= { description: '', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } }) as { description: string };
      entry.description = entry.description ? `${entry.description}; ${code}` : code;
    }
    let requestBody: unknown;
    if (r.body?.type === 'json') requestBody = { required: true, content: { 'application/json': { schema: schema(r.body.schema) } } };
    if (r.body?.type === 'cbor') requestBody = { required: true, description: r.body.description, content: { 'application/cbor': {} } };
    if (r.body?.type === 'bytes') requestBody = { required: true, description: r.body.description, content: { 'application/octet-stream': {} } };
    (paths[path] ??= {})[r.method.toLowerCase()] = {
      summary: r.summary,
      tags: [r.tag],
      ...(r.auth ? { security: [{ bearer: [] }] } : r.security ? { security: r.security.map((scheme) => ({ [scheme]: [] })) } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses,
      'x-svc-write': (r.versioned ?? true) ? (r.write ?? r.method !== 'GET') : false,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Strongroom API',
      version: info.window.max,
      description:
        'Accounts, sessions, quota and versioning for an end-to-end-encrypted media library. Every /v1, /upload and /quota request carries X-Svc-Protocol; every response carries X-Svc-Protocol-Min, X-Svc-Protocol-Max and X-Svc-Min-Client-Build. Errors are RFC 9457 problem details with a stable `code`. See docs/api.md for the choices the contract leaves open.',
    },
    servers: [{ url: info.baseUrl }],
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (EdDSA)' },
        svcCapability: { type: 'http', scheme: 'SvcCapability', bearerFormat: 'JWT (EdDSA, typ svc-capability+jwt), minted by a listed peer', description: 'Authorization: SvcCapability <capability token>' },
      },
      schemas: {
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status', 'code', 'detail'],
          properties: { type: { type: 'string' }, title: { type: 'string' }, status: { type: 'integer' }, code: { type: 'string' }, detail: { type: 'string' } },
          additionalProperties: true,
        },
      },
    },
  };
}
