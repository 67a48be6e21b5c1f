import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { AnyRoute } from './route-def.js';
import { readsAuthorization } from './challenge.js';
import { STATUS, statusOf, type ProblemCode } from './problem.js';
import { ruleKeywords } from './rules.js';
import { named, nameOf } from './schema-names.js';

type Json = Record<string, unknown>;

/**
 * The named schemas of one document (`components.schemas`), filled as operations are described.
 * A schema named with `named()` is described once here and referred to by `$ref` wherever it
 * appears. Requests are described by what they accept and responses by what they hold: a name whose
 * two descriptions differ is an error, so one name never stands for two shapes.
 */
class Components {
  readonly schemas: Record<string, Json> = {};
  readonly #modes = new Map<string, 'input' | 'output'>();

  add(name: string, json: Json, mode: 'input' | 'output'): Json {
    const earlier = this.schemas[name];
    if (earlier !== undefined && JSON.stringify(earlier) !== JSON.stringify(json))
      throw new Error(
        `The schema ${name} reads differently as ${this.#modes.get(name)} and as ${mode}: name the two shapes apart`,
      );
    this.schemas[name] = json;
    this.#modes.set(name, mode);
    return { $ref: `#/components/schemas/${name}` };
  }
}

/**
 * A valibot schema as JSON Schema 2020-12 (the dialect of OpenAPI 3.1). Requests are described by
 * what they accept (input), responses by what they hold (output). Rules carried from core (see
 * rules.ts) add their own keywords; any other check without a JSON Schema form is left out. A named
 * schema (schema-names.ts), the whole or a part, becomes a `$ref` to its entry in `components`.
 */
function schema(s: v.GenericSchema, typeMode: 'input' | 'output', components?: Components): Json {
  const out = toJsonSchema(s, {
    target: 'draft-2020-12',
    typeMode,
    errorMode: 'ignore',
    overrideAction: ({ valibotAction, jsonSchema }) => {
      const keywords = ruleKeywords(valibotAction);
      return keywords ? { ...jsonSchema, ...keywords } : undefined;
    },
    overrideSchema: ({ valibotSchema, jsonSchema }) => {
      const name = components && nameOf(valibotSchema);
      return name ? components!.add(name, jsonSchema as Json, typeMode) : undefined;
    },
  }) as Json;
  delete out.$schema;
  return out;
}

/** The statuses with problem codes an operation can answer, derived from its definition. */
export function problemStatuses(r: AnyRoute): Map<number, Set<ProblemCode>> {
  const byStatus = new Map<number, Set<ProblemCode>>();
  const add = (code: ProblemCode, status = statusOf(code, r.statusContext)) => {
    const codes = byStatus.get(status) ?? new Set();
    byStatus.set(status, codes.add(code));
  };
  const versioned = r.versioned ?? true;
  if (versioned) {
    add('error.protocol.unsupported');
    if (r.write ?? r.method !== 'GET') add('error.protocol.below_min');
  }
  // A malformed id names nothing: 404, like an unknown one.
  if (r.path.includes(':')) add('error.not_found');
  if (r.query) add('error.request.invalid');
  // Authorization sent more than once, where the operation reads it (mount.ts).
  if (readsAuthorization(r)) add('error.request.invalid');
  if (r.auth || r.optionalAuth) {
    add('error.auth.session_invalid');
    // An unreadable session ledger refuses the token with 401, not 503 (decisions: Token pair and sessions).
    add('error.auth.unavailable', statusOf('error.auth.unavailable', 'authenticating'));
    // Any authenticated request may name a sponsored account to act as (X-Svc-Act-As).
    add('error.auth.not_an_owner');
  }
  if (r.callerFromBearer) add('error.auth.not_an_owner');
  const body = r.body?.type;
  if (body === 'json' || body === 'cbor' || body === 'empty') {
    add('error.request.invalid');
    add('error.request.too_large');
  }
  if (body !== undefined) add('error.request.unsupported_media_type');
  // Any operation that reaches the database can meet it unreachable, or its batch queue full (load
  // shedding, SVC_STORE_QUEUE): nothing changes, try again.
  if (versioned || r.auth) {
    add('error.store.unavailable');
    add('error.server.busy');
  }
  if (r.localAuth) add('error.auth.local_disabled');
  for (const code of r.errors ?? []) add(code as ProblemCode);
  return byStatus;
}

/** A stable method name from the method and path: `POST /upload/:id/finalize` is `postUploadByIdFinalize`. */
export function operationIdOf(r: AnyRoute): string {
  if (r.operationId) return r.operationId;
  const words = r.path
    .split('/')
    .filter((s) => s !== '' && s !== 'v1')
    .flatMap((s) => (s.startsWith(':') ? ['by', ...s.slice(1).split(/[-_.]/)] : s.split(/[-_.]/)))
    .filter((w) => w !== '');
  return r.method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

/** What each group of operations is for, shown on the reference page. A new tag may add a line. */
const TAGS: Record<string, string> = {
  auth: 'Registration, sign-in, tokens, re-authentication, password change and signing out everywhere',
  profile: "The caller's own profile",
  totp: 'The TOTP second factor',
  devices: 'The signed device directory: the identity anchor and the devices that may write',
  albums: 'Albums pinned to a protocol version, and the upgrade ceremony',
  sessions: "The caller's sessions and device cohorts",
  public: 'Unauthenticated records a client reads before negotiating',
  quota: 'Storage quota and the upload-session lifecycle',
  assets: 'Assets, the trash and encrypted metadata',
  blobs: 'Reading stored ciphertext back: by its account, or through a share link',
  operations: 'Liveness, readiness and metrics for the operator (no protocol header, no token)',
  oidc: 'Signing in through an OpenID Connect provider, and linking or unlinking one',
  sponsored: 'Sponsored accounts: created and paid for by an account, acted as by their owners',
  links: 'Share links (read an album without an account) and upload links (guests drop files into an album)',
  discovery: 'Handles, their publication, and looking people up here and on listed peer servers',
  sync: 'Library sync: what an account holds, page by page, and what changed since a cursor',
};

/**
 * What a reader of one operation needs beside its summary, said in words from the route's own
 * definition: who may call it, whether it needs the protocol header, whether it counts as a write
 * for the minimum-version rule, and how its answers may be cached. The same facts are in the
 * operation's security, parameters and responses; here they are in one place a person reads.
 */
function operationDescription(r: AnyRoute): string {
  const said: string[] = [];
  if (r.auth) {
    said.push('Needs a bearer access token; `X-Svc-Act-As` acts as a sponsored account the caller owns.');
    if (r.uploadToken) said.push("A guest may send its drop's `Authorization: Upload <upload token>` instead.");
  } else if (r.optionalAuth) {
    said.push(
      'Takes a bearer access token when one is sent, and works without one; `X-Svc-Act-As` acts as a sponsored account the caller owns.',
    );
  } else if (r.security?.length) {
    said.push(
      `Checks its own credentials: ${r.security.map((s) => (s === 'bearer' ? 'a bearer token' : "a listed peer's `SvcCapability` token")).join(' or ')}.`,
    );
  } else {
    said.push('Sends no `Authorization` header.');
  }
  if (r.localAuth)
    said.push('Refused with 403 `error.auth.local_disabled` when password sign-in is off (`SVC_AUTH_LOCAL=false`).');
  if (!(r.versioned ?? true)) said.push('Needs no `X-Svc-Protocol`.');
  else if (r.write ?? r.method !== 'GET')
    said.push('A write: refused with 426 `error.protocol.below_min` below the minimum protocol version in force.');
  if (r.noStore) said.push('Its answers hold secrets and carry `Cache-Control: no-store`.');
  if (r.responses[304]) said.push('Answers 304 to an `If-None-Match` naming the current `ETag`.');
  return said.join(' ');
}

/** The operation's security requirements; an empty requirement (`{}`) makes the token optional. */
function securityOf(r: AnyRoute): Record<string, never[]>[] {
  if (r.auth) return r.uploadToken ? [{ bearer: [] }, { upload: [] }] : [{ bearer: [] }];
  if (r.optionalAuth) return [{}, { bearer: [] }];
  return r.security?.map((scheme) => ({ [scheme]: [] })) ?? [];
}

const PROTOCOL_HEADERS = {
  'X-Svc-Protocol-Min': { $ref: '#/components/headers/X-Svc-Protocol-Min' },
  'X-Svc-Protocol-Max': { $ref: '#/components/headers/X-Svc-Protocol-Max' },
  'X-Svc-Min-Client-Build': { $ref: '#/components/headers/X-Svc-Min-Client-Build' },
};

/** Response headers that carry a count of bytes: 64-bit integers, as byte counts in bodies are. */
const BYTE_HEADERS = new Set(['Content-Length', 'Upload-Offset', 'Upload-Length']);
const BYTE_COUNT = { type: 'integer', format: 'int64', minimum: 0 };

/** Problem statuses that tell the client when to come back (throttles, rate limits, load shedding). */
const RETRY_STATUSES = new Set([429, 503]);

/**
 * A response body that is not JSON (the directory's CBOR, a blob's bytes) is binary to a client
 * generator: without `format: binary` generated clients parse it as JSON and throw.
 */
function responseSchema(contentType: string | undefined, s: v.GenericSchema, components: Components): Json {
  if (contentType === undefined || /[/+]json$/.test(contentType)) return schema(s, 'output', components);
  const described = schema(s, 'output');
  return {
    type: 'string',
    format: 'binary',
    contentMediaType: contentType,
    ...(described.description ? { description: described.description } : {}),
  };
}

function problemContent(status: number, codes: Set<ProblemCode>): Json {
  return {
    'application/problem+json': {
      schema: {
        allOf: [{ $ref: '#/components/schemas/Problem' }],
        properties: { status: { const: status }, code: { enum: [...codes].sort() } },
      },
    },
  };
}

function operation(r: AnyRoute, components: Components): Json {
  const parameters: Json[] = [];
  const pathSchema = r.params
    ? (schema(r.params as v.GenericSchema, 'input') as { properties?: Record<string, Json> })
    : {};
  for (const m of r.path.matchAll(/:([A-Za-z_]+)/g)) {
    parameters.push({
      name: m[1],
      in: 'path',
      required: true,
      schema: pathSchema.properties?.[m[1]!] ?? { type: 'string' },
    });
  }
  if (r.query) {
    const q = schema(r.query as v.GenericSchema, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, s] of Object.entries(q.properties ?? {}))
      parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema: s });
  }
  if (r.versioned ?? true) {
    parameters.push({ $ref: '#/components/parameters/X-Svc-Protocol' });
  }
  if (r.auth || r.optionalAuth || r.callerFromBearer) parameters.push({ $ref: '#/components/parameters/X-Svc-Act-As' });
  for (const [name, description] of Object.entries(r.requestHeaders ?? {}))
    parameters.push({ name, in: 'header', required: false, description, schema: { type: 'string' } });

  const responses: Record<string, Json> = {};
  for (const [status, spec] of Object.entries(r.responses)) {
    if (spec.name !== undefined && spec.schema !== undefined) named(spec.name, spec.schema);
    const binaryType = spec.contentType ?? 'application/octet-stream';
    // A binary answer may also come as JSON on request (a blob's `?as=url`): both are listed.
    const content = spec.binary
      ? {
          [binaryType]: { schema: { type: 'string', format: 'binary', contentMediaType: binaryType } },
          ...(spec.schema
            ? { 'application/json': { schema: responseSchema(undefined, spec.schema, components) } }
            : {}),
        }
      : spec.schema
        ? {
            [spec.contentType ?? 'application/json']: {
              schema: responseSchema(spec.contentType, spec.schema, components),
            },
          }
        : undefined;
    const own = Object.fromEntries(
      Object.entries(spec.headers ?? {}).map(([name, description]) => [
        name,
        { description, schema: BYTE_HEADERS.has(name) ? BYTE_COUNT : { type: 'string' } },
      ]),
    );
    // Answers that hand out a secret say so to every cache (decisions: token responses carry no-store).
    const noStore =
      r.noStore === true && Number(status) < 300
        ? { 'Cache-Control': { $ref: '#/components/headers/Cache-Control-no-store' } }
        : {};
    responses[status] = {
      description: spec.description,
      headers: { ...PROTOCOL_HEADERS, ...own, ...noStore },
      ...(content ? { content } : {}),
    };
  }
  for (const [status, codes] of [...problemStatuses(r)].sort(([a], [b]) => a - b)) {
    const declared = responses[status];
    // A status that answers problem codes is described as problem details, whatever body the route declared.
    const base = (declared?.headers as Record<string, Json> | undefined) ?? PROTOCOL_HEADERS;
    const retry = RETRY_STATUSES.has(status) ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {};
    // Every 401 names the scheme it wants (RFC 9110 section 11.6.1).
    const challenge = status === 401 ? { 'WWW-Authenticate': { $ref: '#/components/headers/WWW-Authenticate' } } : {};
    const headers = { ...base, ...retry, ...challenge };
    responses[status] = {
      description: declared?.description ?? [...codes].sort().join(', '),
      headers,
      content: problemContent(status, codes),
    };
  }

  // A status range after the exact statuses: a generator reads exact statuses first.
  if (r.passesOn4xx !== undefined)
    responses['4XX'] = {
      description: r.passesOn4xx,
      headers: PROTOCOL_HEADERS,
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    };

  let requestBody: Json | undefined;
  if (r.body?.type === 'json') {
    if (r.body.name !== undefined) named(r.body.name, r.body.schema);
    requestBody = {
      required: true,
      content: { 'application/json': { schema: schema(r.body.schema, 'input', components) } },
    };
  }
  if (r.body?.type === 'empty') {
    // A closed object with no properties: generators read `maxProperties: 0` as an open map.
    requestBody = {
      required: false,
      description: 'None, or an empty JSON object',
      content: {
        'application/json': {
          schema: components.add(
            'Empty',
            { type: 'object', description: 'An empty JSON object', properties: {}, additionalProperties: false },
            'input',
          ),
        },
      },
    };
  }
  if (r.body?.type === 'cbor') {
    requestBody = {
      required: true,
      description: r.body.description,
      content: {
        'application/cbor': { schema: { type: 'string', format: 'binary', contentMediaType: 'application/cbor' } },
      },
    };
  }
  if (r.body?.type === 'bytes') {
    requestBody = {
      required: true,
      description: r.body.description,
      content: {
        'application/octet-stream': {
          schema: { type: 'string', format: 'binary', contentMediaType: 'application/octet-stream' },
        },
      },
    };
  }
  return {
    operationId: operationIdOf(r),
    summary: r.summary,
    description: operationDescription(r),
    tags: [r.tag],
    security: securityOf(r),
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
    'x-svc-write': (r.versioned ?? true) ? (r.write ?? r.method !== 'GET') : false,
  };
}

/** RFC 9457 problem details, as every refusal answers. */
const PROBLEM = {
  type: 'object',
  description: 'RFC 9457 problem details. Extra members carry what the client needs to act on the refusal.',
  required: ['type', 'title', 'status', 'code', 'detail'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    code: {
      type: 'string',
      enum: Object.keys(STATUS).sort(),
      description: 'Stable problem code; each operation lists the ones it can answer',
    },
    detail: { type: 'string' },
    supported_min: { type: 'string', description: 'On 426: the oldest supported protocol version' },
    supported_max: { type: 'string', description: 'On 426: the newest supported protocol version' },
    album_pin: {
      type: 'string',
      description: "On 426 error.protocol.below_album_pin: the album's pinned version",
    },
    live_intent_id: { type: 'string', description: 'On 409 album refusals: the live upgrade intent' },
    attempts_left: {
      type: 'integer',
      description: 'On 401 error.auth.invalid_code: codes this challenge still takes',
    },
  },
  additionalProperties: true,
};

/** `head` and the rest of a GET's id: `getQuota` is `headQuota`. */
const headIdOf = (getId: string): string =>
  getId.startsWith('get') ? `head${getId.slice(3)}` : `head${getId[0]!.toUpperCase()}${getId.slice(1)}`;

/**
 * The HEAD a GET path answers (app.ts answers every HEAD as the GET it stands for, headers and
 * statuses alike, with no body): the GET's operation without its bodies, each answer stating the
 * Content-Length the GET's body would have.
 */
function headOperation(get: Json): Json {
  const responses: Record<string, Json> = {};
  for (const [status, answer] of Object.entries(get.responses as Record<string, Json>)) {
    const { content: _, ...rest } = answer;
    const withBody = answer.content !== undefined;
    responses[status] = {
      ...rest,
      headers: {
        ...(rest.headers as Json | undefined),
        ...(withBody
          ? {
              'Content-Length': {
                description: 'The length in bytes of the body GET would send',
                required: true,
                schema: BYTE_COUNT,
              },
            }
          : {}),
      },
    };
  }
  const { requestBody: _, ...rest } = get;
  return {
    ...rest,
    operationId: headIdOf(get.operationId as string),
    summary: `Headers only: ${String(get.summary)}`,
    description: `Answers as GET would, with the same status and headers (Content-Length included) and no body. ${String(get.description)}`,
    responses,
  };
}

/**
 * The OpenAPI 3.1 document, generated from the same route definitions and valibot schemas that
 * validate requests, so the reference cannot drift from the behaviour. Everything the router, the
 * protocol check, authentication and the body reader can answer is added from the definition
 * itself (see problemStatuses), so a new route is documented whole by declaring its own codes.
 */
export function openApiDocument(
  routes: readonly AnyRoute[],
  info: { baseUrl: string; window: { min: string; max: string } },
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const ids = new Set<string>();
  const components = new Components();
  const add = (path: string, method: string, op: Json) => {
    if (ids.has(op.operationId as string)) throw new Error(`Two operations are named ${String(op.operationId)}`);
    ids.add(op.operationId as string);
    const item = paths[path] ?? {};
    item[method] = op;
    paths[path] = item;
  };
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const op = operation(r, components);
    add(path, r.method.toLowerCase(), op);
    if (r.method === 'GET') add(path, 'head', headOperation(op));
  }
  const schemes = new Set(routes.flatMap((r) => r.security ?? []));
  const versionHeader = (description: string) => ({
    description,
    required: true,
    schema: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Strongroom API',
      version: info.window.max,
      description:
        'Accounts, sessions, quota and versioning for an end-to-end-encrypted media library. Every /v1, /upload and /quota request carries X-Svc-Protocol; every response carries X-Svc-Protocol-Min, X-Svc-Protocol-Max and X-Svc-Min-Client-Build. Errors are RFC 9457 problem details with a stable `code`, listed per operation and status. HEAD on a path that takes GET answers as GET would, without the body (the two blob downloads included: same status, ETag, Content-Length and Content-Range); a known path asked with any other method it does not list answers 405 error.request.method_not_allowed with an Allow header; an unknown path answers 404 error.not_found. See docs/api.md for the choices the contract leaves open.',
    },
    servers: [{ url: info.baseUrl }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({
      name,
      ...(TAGS[name] ? { description: TAGS[name] } : {}),
    })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (EdDSA)' },
        ...(schemes.has('metricsToken')
          ? {
              metricsToken: {
                type: 'http',
                scheme: 'bearer',
                description: "The operator's SVC_METRICS_TOKEN, sent as `Authorization: Bearer <token>`",
              },
            }
          : {}),
        // Neither scheme name is in the IANA HTTP authentication registry, so they are described as
        // what they are on the wire, a value of the Authorization header, which every tool reads.
        svcCapability: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description:
            'The header value is `SvcCapability <capability token>`: an EdDSA JWT (typ svc-capability+jwt) minted by a listed peer',
        },
        upload: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description:
            "The header value is `Upload <upload token>`: a guest's one-drop upload token (POST /v1/links/{link_id}/drops), admitting that drop's PUT and finalize only",
        },
      },
      parameters: {
        'X-Svc-Protocol': {
          name: 'X-Svc-Protocol',
          in: 'header',
          required: true,
          description: `The protocol version the client speaks (YYYY-MM-DD); this server supports ${info.window.min} to ${info.window.max}. Missing, malformed or newer: 426.`,
          schema: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' },
        },
        'X-Svc-Act-As': {
          name: 'X-Svc-Act-As',
          in: 'header',
          required: false,
          description: 'Act as a sponsored account the caller owns (403 error.auth.not_an_owner otherwise)',
          schema: { type: 'string', format: 'uuid' },
        },
      },
      headers: {
        'X-Svc-Protocol-Min': versionHeader('The oldest protocol version this server accepts writes from'),
        'X-Svc-Protocol-Max': versionHeader('The newest protocol version this server speaks'),
        'X-Svc-Min-Client-Build': {
          description: 'The oldest client build the operator supports',
          required: true,
          schema: { type: 'string' },
        },
        'Retry-After': {
          description: 'Whole seconds until the request may succeed (throttles, rate limits, load shedding)',
          required: false,
          schema: { type: 'integer', minimum: 0 },
        },
        'WWW-Authenticate': {
          description:
            'The schemes the operation takes (`Bearer`, `Upload`, `SvcCapability`); the one the request presented and that was refused carries `error="invalid_token"` (RFC 6750 section 3)',
          required: true,
          schema: { type: 'string' },
        },
        'Cache-Control-no-store': {
          description: '`no-store`: the answer holds a secret (a token)',
          required: true,
          schema: { type: 'string', const: 'no-store' },
        },
      },
      // By name, so a reader (and a diff of the generated types) finds each in one place.
      schemas: Object.fromEntries(
        Object.entries({ ...components.schemas, Problem: PROBLEM }).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      ),
    },
  };
}
