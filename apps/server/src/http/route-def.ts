import type { Context } from 'hono';
import type * as v from 'valibot';
import type { Principal } from '@strongroom/core';
import type { StatusContext } from './problem.js';

/**
 * What a route is: its method and path, what it accepts and answers, and its handler. One
 * definition drives the router (mount.ts), the body reader (request.ts) and the API reference.
 */

/** OPTIONS is a route of its own only where a protocol defines it (tus discovery); a CORS preflight never reaches a route. */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/** How a route takes its body. `bytes` leaves reading to the handler (uploads stream their own). */
export type BodySpec =
  | {
      readonly type: 'json';
      readonly schema: v.GenericSchema;
      /** The body's name in the API reference, for a schema not named where it is defined (schema-names.ts). */
      readonly name?: string;
    }
  | { readonly type: 'cbor'; readonly description: string }
  | { readonly type: 'bytes'; readonly description: string }
  | { readonly type: 'empty' };

export interface ResponseSpec {
  readonly description: string;
  readonly schema?: v.GenericSchema;
  /** The body's name in the API reference, for a schema not named where it is defined (schema-names.ts). */
  readonly name?: string;
  readonly contentType?: string;
  /** The body is raw bytes of `contentType` (default application/octet-stream), not a schema. */
  readonly binary?: boolean;
  /** Response headers worth documenting, by name: what each says. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface HandlerInput<B, P, Q> {
  readonly c: Context;
  readonly body: B;
  readonly params: P;
  readonly query: Q;
  /** Set on routes with `auth: true`. */
  readonly principal: Principal;
  /**
   * On routes with `optionalAuth`: the caller behind the request's Bearer token, resolved exactly as
   * on `auth` routes (`X-Svc-Act-As` included, refusals thrown as there), or null when no Bearer
   * token was sent. Resolved only when called, so a route reads the token only where it needs one.
   */
  readonly caller: () => Promise<Principal | null>;
  /** The negotiated X-Svc-Protocol, on versioned routes. */
  readonly version: string;
}

type Out<S> = S extends v.GenericSchema ? v.InferOutput<S> : undefined;
type BodyOf<BS> = BS extends { type: 'json'; schema: infer S }
  ? Out<S>
  : BS extends { type: 'cbor' }
    ? Uint8Array
    : undefined;

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
   * With `auth: false`: takes the caller's access token when one is sent, without needing one (an
   * OpenID flow serves signed-out people and signed-in accounts). The handler resolves it with
   * `caller()`; a 401 refusing it carries `error="invalid_token"`, and the API reference lists
   * Bearer as optional.
   */
  readonly optionalAuth?: boolean;
  /**
   * With `security` naming `bearer` (a route that checks its own credentials): a Bearer token is
   * resolved by `caller()`, exactly as on `auth` routes, `X-Svc-Act-As` included.
   */
  readonly callerFromBearer?: boolean;
  /**
   * Also admits a guest's `Authorization: Upload <token>` for the upload named by the `id` path
   * parameter (a web-upload drop's send and finalize). Needs `auth: true`.
   */
  readonly uploadToken?: boolean;
  /**
   * A local sign-in operation (password or TOTP): refused with 403 `error.auth.local_disabled`,
   * before the handler runs, on a server whose local sign-in is off (SVC_AUTH_LOCAL=false).
   * Enforced once in mount.ts and listed among the route's errors in the API reference.
   */
  readonly localAuth?: boolean;
  /**
   * Its answers hand out secrets (a token pair, an access token, a TOTP secret): they carry `Cache-Control:
   * no-store`, so no cache along the way keeps one (RFC 6749 section 5.1).
   */
  readonly noStore?: boolean;
  /**
   * The schemes a route with `auth: false` checks itself (the API reference, and the 401's
   * `WWW-Authenticate`). `metricsToken` is a Bearer token that is no session: the operator's own.
   */
  readonly security?: readonly ('bearer' | 'svcCapability' | 'metricsToken')[];
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
  /** Optional request headers the route reads (for the API reference), by name: what each does. */
  readonly requestHeaders?: Readonly<Record<string, string>>;
  /**
   * Refusals another server made, passed on with that server's own status and code (a lookup
   * forwarded to a peer): the reference lists them as `4XX`, with what this says.
   */
  readonly passesOn4xx?: string;
  /** The problem codes this route can answer with (for the API reference). */
  readonly errors?: readonly string[];
  /** The client's method name in the API reference; derived from the method and path when absent. */
  readonly operationId?: string;
  /**
   * The named context (problem.ts CONTEXT_STATUS) in which this route's refusals take their status,
   * where the specification gives a code a second one. The document and the answers both follow it.
   */
  readonly statusContext?: StatusContext;
  readonly handle: (input: HandlerInput<BodyOf<BS>, Out<PS>, Out<QS>>) => Promise<Response> | Response;
}

export type AnyRoute = RouteDef<BodySpec | undefined, v.GenericSchema | undefined, v.GenericSchema | undefined>;

/** Identity function that keeps the route's schema types for its handler. */
export function route<
  const BS extends BodySpec | undefined,
  PS extends v.GenericSchema | undefined = undefined,
  QS extends v.GenericSchema | undefined = undefined,
>(def: RouteDef<BS, PS, QS>): RouteDef<BodySpec | undefined, v.GenericSchema | undefined, v.GenericSchema | undefined> {
  return def as never;
}
