import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { concatBytes, CoreError, negotiateProtocol, type Principal, type ProtocolWindow, type Result } from '@strongroom/core';
import { HttpProblem, type ProblemCode, type StatusContext } from './problem.js';
import type { ProtocolMoment } from './protocol-state.js';
import type { ResponseHeaders } from './respond.js';
import { problemCodeOf } from './rules.js';
import { parseJsonObject } from './strict-json.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const JSON_LIMIT = 64 * 1024;
export const CBOR_LIMIT = 256 * 1024;

/** How a route takes its body. `bytes` leaves reading to the handler (uploads stream their own). */
export type BodySpec =
  | { readonly type: 'json'; readonly schema: v.GenericSchema }
  | { readonly type: 'cbor'; readonly description: string }
  | { readonly type: 'bytes'; readonly description: string }
  | { readonly type: 'empty' };

export interface ResponseSpec {
  readonly description: string;
  readonly schema?: v.GenericSchema;
  readonly contentType?: string;
}

export interface HandlerInput<B, P, Q> {
  readonly c: Context;
  readonly body: B;
  readonly params: P;
  readonly query: Q;
  /** Set on routes with `auth: true`. */
  readonly principal: Principal;
  /** The negotiated X-Svc-Protocol, on versioned routes. */
  readonly version: string;
}

type Out<S> = S extends v.GenericSchema ? v.InferOutput<S> : undefined;
type BodyOf<BS> = BS extends { type: 'json'; schema: infer S } ? Out<S> : BS extends { type: 'cbor' } ? Uint8Array : undefined;

/** One HTTP operation: what it accepts, what it answers, and the handler. Drives both Hono and OpenAPI. */
export interface RouteDef<BS = BodySpec | undefined, PS = unknown, QS = unknown> {
  readonly method: Method;
  /** Hono syntax, e.g. `/v1/auth/sessions/:session_id`. */
  readonly path: string;
  readonly summary: string;
  readonly tag: string;
  /** Needs `Authorization: Bearer <access token>`. */
  readonly auth: boolean;
  /**
   * Also admits a guest's `Authorization: Upload <token>` for the upload named by the `id` path
   * parameter (a web-upload drop's send and finalize). Needs `auth: true`.
   */
  readonly uploadToken?: boolean;
  /** For the API reference only: the schemes a route with `auth: false` checks itself. */
  readonly security?: readonly ('bearer' | 'svcCapability')[];
  /** Needs X-Svc-Protocol (everything but /.well-known and the OpenAPI document). Default true. */
  readonly versioned?: boolean;
  /**
   * A write for protocol purposes. Default: any method but GET/HEAD. Signing in and out (login,
   * verify-totp, refresh, revoking a session, logout/all) set false so an old client can still do them.
   */
  readonly write?: boolean;
  readonly body?: BS;
  /** Path parameters; a value that fails is 404 (a malformed id names nothing). */
  readonly params?: PS;
  /** Query parameters; a value that fails is 400. */
  readonly query?: QS;
  readonly responses: Readonly<Record<number, ResponseSpec>>;
  /** The problem codes this route can answer with (for the API reference). */
  readonly errors?: readonly string[];
  /** The client's method name in the API reference; derived from the method and path when absent. */
  readonly operationId?: string;
  /**
   * The named context (problem.ts CONTEXT_STATUS) in which this route's refusals take their status,
   * where the contract gives a code a second one. The document and the answers both follow it.
   */
  readonly statusContext?: StatusContext;
  readonly handle: (input: HandlerInput<BodyOf<BS>, Out<PS>, Out<QS>>) => Promise<Response> | Response;
}

export type AnyRoute = RouteDef<BodySpec | undefined, v.GenericSchema | undefined, v.GenericSchema | undefined>;

/** Identity function that keeps the route's schema types for its handler. */
export function route<const BS extends BodySpec | undefined, PS extends v.GenericSchema | undefined = undefined, QS extends v.GenericSchema | undefined = undefined>(
  def: RouteDef<BS, PS, QS>,
): RouteDef<BodySpec | undefined, v.GenericSchema | undefined, v.GenericSchema | undefined> {
  return def as never;
}

export interface MountOptions {
  /** The window when the request carries no moment of its own (a handler called without the app's fetch). */
  readonly window: ProtocolWindow;
  /** Resolves a bearer token; a thrown `error.auth.unavailable` becomes 401 (see authFailure). */
  readonly authenticate: (token: string) => Promise<Result<Principal, 'error.auth.session_invalid'>>;
  /** Resolves `X-Svc-Act-As`; called only for authenticated requests that carry the header. */
  readonly actAs?: (principal: Principal, target: string) => Promise<Result<Principal, 'error.auth.not_an_owner'>>;
  /** Resolves a guest's upload token for one upload (routes with `uploadToken`); null when it is not that upload's. */
  readonly guest?: (token: string, uploadId: string) => Promise<Principal | null>;
}

/**
 * What the app's fetch wrapper puts on each request's environment: the protocol moment (window,
 * pending deprecations) at its arrival, and the response headers that go with it.
 */
export interface ProtocolBindings {
  responseHeaders?: ResponseHeaders;
  protocol?: ProtocolMoment;
}

interface NodeBindings {
  incoming?: { headers: Record<string, string | string[] | undefined> } & AsyncIterable<Uint8Array>;
}

/**
 * A request header, read from Node's IncomingMessage when the app runs on @hono/node-server.
 * Touching the Fetch API `Request.headers` there builds a whole validated Headers object, which
 * cost more than the rest of an authenticated request; tests through app.request() fall back to it.
 */
export function requestHeader(c: Context, name: string): string | undefined {
  const incoming = (c.env as NodeBindings | undefined)?.incoming;
  if (!incoming) return c.req.header(name);
  const value = incoming.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The request body as a stream of chunks, from Node directly when possible (see requestHeader). */
export function bodyChunks(c: Context): AsyncIterable<Uint8Array> {
  const incoming = (c.env as NodeBindings | undefined)?.incoming;
  if (incoming) return incoming;
  const stream = c.req.raw.body;
  return {
    async *[Symbol.asyncIterator]() {
      if (stream === null) return;
      const reader = stream.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          yield value;
        }
      } finally {
        await reader.cancel().catch(() => {});
      }
    },
  };
}

function mediaType(c: Context): string | null {
  const raw = requestHeader(c, 'content-type');
  return raw ? raw.split(';')[0]!.trim().toLowerCase() : null;
}

function issuesText(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues
    .slice(0, 3)
    .map((i) => {
      const path = i.path?.map((p) => String(p.key)).join('.');
      return path ? `${path}: ${i.message}` : i.message;
    })
    .join('; ');
}

/** Reads the raw body within `limit` bytes, checking the declared length first. */
export async function readLimited(c: Context, limit: number, code: 'error.request.too_large' | 'error.upload.too_large' = 'error.request.too_large'): Promise<Uint8Array> {
  const declared = requestHeader(c, 'content-length');
  if (declared !== undefined && Number(declared) > limit) throw new HttpProblem(code, `The body may hold at most ${limit} bytes.`);
  // Stream and stop at the limit, so a chunked body without a length cannot make us buffer it all.
  const source = bodyChunks(c);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const value of source) {
    total += value.byteLength;
    if (total > limit) throw new HttpProblem(code, `The body may hold at most ${limit} bytes.`);
    chunks.push(value);
  }
  return concatBytes(...chunks);
}

async function readBody(c: Context, spec: BodySpec | undefined): Promise<unknown> {
  if (spec === undefined || spec.type === 'bytes') return undefined;
  if (spec.type === 'empty') {
    // A bodiless POST may send nothing at all, or `{}`.
    const raw = await readLimited(c, JSON_LIMIT);
    if (raw.byteLength === 0) return undefined;
    if (mediaType(c) !== 'application/json') throw new HttpProblem('error.request.unsupported_media_type', 'This operation takes no body, or an empty JSON object.');
    const parsed = parseJsonObject(raw);
    if (Object.keys(parsed).length > 0) {
      throw new HttpProblem('error.request.invalid', 'This operation takes no body, or an empty JSON object.');
    }
    return undefined;
  }
  if (spec.type === 'cbor') {
    if (mediaType(c) !== 'application/cbor') throw new HttpProblem('error.request.unsupported_media_type', 'This operation takes an application/cbor body.');
    return readLimited(c, CBOR_LIMIT);
  }
  if (mediaType(c) !== 'application/json') throw new HttpProblem('error.request.unsupported_media_type', 'This operation takes an application/json body.');
  const raw = await readLimited(c, JSON_LIMIT);
  const parsed = parseJsonObject(raw);
  const result = v.safeParse(spec.schema, parsed);
  if (!result.success) throw new HttpProblem(problemCodeOf(result.issues), issuesText(result.issues));
  return result.output;
}

function honoMethod(m: Method): 'get' | 'post' | 'put' | 'patch' | 'delete' {
  return m.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
}

/**
 * Registers the routes on the app, in this order per request: protocol negotiation, path and query
 * parameters, authentication, body. (A known path with another method is answered by the app's
 * notFound handler, through allowedMethods.)
 */
export function mountRoutes(app: Hono, routes: readonly AnyRoute[], options: MountOptions): void {
  for (const r of routes) {
    const handle = r.statusContext === undefined ? r.handle : inContext(r.handle, r.statusContext);
    app[honoMethod(r.method)](r.path, async (c) => {
      const versioned = r.versioned ?? true;
      let version = '';
      if (versioned) {
        const write = r.write ?? !(r.method === 'GET');
        const bindings = c.env as ProtocolBindings | undefined;
        const moment = bindings?.protocol;
        const negotiated = negotiateProtocol(requestHeader(c, 'x-svc-protocol'), moment?.window ?? options.window, { write });
        if (!negotiated.ok) throw HttpProblem.from(negotiated);
        version = negotiated.value.version;
        // Below an announced, not yet effective Min: every response from here on says when it ends.
        if (moment !== undefined && moment.pending.length > 0) {
          const notice = moment.noticeHeaders(version);
          if (notice !== null) bindings!.responseHeaders = notice;
        }
      }
      let params: unknown = undefined;
      if (r.params) {
        const p = v.safeParse(r.params as v.GenericSchema, c.req.param());
        if (!p.success) throw new HttpProblem('error.not_found', 'No such resource.');
        params = p.output;
      }
      let query: unknown = undefined;
      if (r.query) {
        const q = v.safeParse(r.query as v.GenericSchema, c.req.query());
        if (!q.success) throw new HttpProblem('error.request.invalid', issuesText(q.issues));
        query = q.output;
      }
      let principal: Principal = { accountId: '', sessionId: '' };
      if (r.auth) {
        const authorization = requestHeader(c, 'authorization');
        const guestToken = r.uploadToken === true ? uploadToken(authorization) : null;
        if (guestToken !== null && options.guest) {
          const guest = await options.guest(guestToken, (params as { id: string }).id);
          if (guest === null) throw new HttpProblem('error.auth.session_invalid', 'The upload token is not valid for this upload.');
          principal = guest;
        } else {
          const token = bearerToken(authorization);
          if (token === null) throw new HttpProblem('error.auth.session_invalid', 'An access token is required (Authorization: Bearer).');
          let who: Result<Principal, 'error.auth.session_invalid'>;
          try {
            who = await options.authenticate(token);
          } catch (cause) {
            throw authFailure(cause);
          }
          if (!who.ok) throw HttpProblem.from(who);
          principal = who.value;
          // The one place acting as a sponsored account is decided; without the header it costs one property read.
          const actAs = requestHeader(c, 'x-svc-act-as');
          if (actAs !== undefined && options.actAs) {
            const acting = await options.actAs(principal, actAs);
            if (!acting.ok) throw HttpProblem.from(acting);
            principal = acting.value;
          }
        }
      }
      // GETs and uploads read no body here: skipping the call saves a microtask on the hot path.
      const body = r.body === undefined || r.body.type === 'bytes' ? undefined : await readBody(c, r.body);
      // Awaited rather than returned: handing back a pending promise from an async function costs
      // two more turns of the microtask queue.
      return await handle({ c, body, params, query, principal, version } as never);
    });
  }
}

/**
 * What a known path allows, for the 405 answer. Looked up only when no route matched (from the app's
 * notFound handler), so each request that does match finds exactly one handler and Hono skips its
 * middleware composition.
 */
export function allowedMethods(routes: readonly AnyRoute[]): (path: string) => string | null {
  const byPath = new Map<string, Set<string>>();
  for (const r of routes) byPath.set(r.path, (byPath.get(r.path) ?? new Set()).add(r.method));
  const table = [...byPath].map(([path, methods]) => ({
    // Hono's `:name` matches one non-empty segment; nothing else in our paths is special.
    pattern: new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}$`),
    allow: [...methods].join(', '),
  }));
  return (path) => table.find((t) => t.pattern.test(path))?.allow ?? null;
}

/**
 * The token of an `Authorization: Bearer <token>` header, or null. Its shape is left to the token
 * check (a cache hit needs the exact string; anything else goes through jose), which saves running
 * a regular expression over a long header on every request.
 */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined || header.length <= 7) return null;
  // The scheme is case-insensitive (RFC 9110); the common spelling is checked first as it is free.
  if (!header.startsWith('Bearer ') && header.slice(0, 7).toLowerCase() !== 'bearer ') return null;
  return header.slice(7);
}

/** The token of an `Authorization: Upload <token>` header (a guest's one-drop token), or null. */
export function uploadToken(header: string | undefined): string | null {
  if (header === undefined || header.length <= 7 || header.slice(0, 7).toLowerCase() !== 'upload ') return null;
  return header.slice(7);
}

/** Turns an unreadable session ledger into 401 error.auth.unavailable, as the contract asks. */
function authFailure(cause: unknown): HttpProblem {
  if (cause instanceof CoreError && cause.code === 'error.auth.unavailable') {
    return new HttpProblem('error.auth.unavailable', 'The session ledger cannot be read; try again shortly.', {}, 'authenticating');
  }
  throw cause;
}

/** A handler whose refusals take their status in the route's named context (only routes that name one pay for the wrapper). */
function inContext(handle: AnyRoute['handle'], context: StatusContext): AnyRoute['handle'] {
  return async (input) => {
    try {
      return await handle(input);
    } catch (e) {
      throw e instanceof HttpProblem ? e.inContext(context) : e;
    }
  };
}
