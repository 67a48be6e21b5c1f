import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { negotiateProtocol, type Principal, type ProtocolWindow, type Result } from '@strongroom/core';
import { readsAuthorization } from './challenge.js';
import { authFailure, bearerToken, uploadToken } from './credentials.js';
import { HttpProblem, type StatusContext } from './problem.js';
import type { ProtocolMoment } from './protocol-state.js';
import { issuesText, readBody, repeatsHeader, requestHeader } from './request.js';
import { withNoStore, type ResponseHeaders } from './respond.js';
import type { AnyRoute, Method } from './route-def.js';

/** Mounting routes on Hono: protocol negotiation, path and query, credentials, body, then the handler. */

export interface MountOptions {
  /** The window when the request carries no moment of its own (a handler called without the app's fetch). */
  readonly window: ProtocolWindow;
  /** Resolves a bearer token; a thrown `error.auth.unavailable` becomes 401 (see authFailure). */
  readonly authenticate: (token: string) => Promise<Result<Principal, 'error.auth.session_invalid'>>;
  /** Resolves `X-Svc-Act-As`; called only for authenticated requests that carry the header. */
  readonly actAs?: (principal: Principal, target: string) => Promise<Result<Principal, 'error.auth.not_an_owner'>>;
  /** Resolves a guest's upload token for one upload (routes with `uploadToken`); null when it is not that upload's. */
  readonly guest?: (token: string, uploadId: string) => Promise<Principal | null>;
  /** Whether local sign-in is on (SVC_AUTH_LOCAL); when false, routes marked `localAuth` are refused. Default true. */
  readonly localAuth?: boolean;
}

/**
 * What the app's fetch wrapper puts on each request's environment: the protocol moment (window,
 * pending deprecations) at its arrival, and the response headers that go with it.
 */
export interface ProtocolBindings {
  responseHeaders?: ResponseHeaders;
  protocol?: ProtocolMoment;
}

function honoMethod(m: Method): 'get' | 'post' | 'put' | 'patch' | 'delete' | 'options' {
  return m.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete' | 'options';
}

/**
 * Registers the routes on the app, in this order per request: Authorization given at most once,
 * protocol negotiation, path and query parameters, authentication, body. (A known path with
 * another method is answered by the app's notFound handler, through allowedMethods.)
 */
export function mountRoutes(app: Hono, routes: readonly AnyRoute[], options: MountOptions): void {
  for (const r of routes) {
    const handle = r.statusContext === undefined ? r.handle : inContext(r.handle, r.statusContext);
    const localRefused = r.localAuth === true && options.localAuth === false;
    const takesAuthorization = readsAuthorization(r);
    app[honoMethod(r.method)](r.path, async (c) => {
      // Authorization is no list (RFC 9110 sections 5.3, 11.6.2). Node would authenticate the first
      // of two lines, where a proxy in front may have judged the last: neither is taken.
      if (takesAuthorization && repeatsHeader(c, 'authorization')) {
        throw new HttpProblem('error.request.invalid', 'A request may carry Authorization only once.');
      }
      const versioned = r.versioned ?? true;
      let version = '';
      if (versioned) {
        const write = r.write ?? !(r.method === 'GET');
        const bindings = c.env as ProtocolBindings | undefined;
        const moment = bindings?.protocol;
        const negotiated = negotiateProtocol(requestHeader(c, 'x-svc-protocol'), moment?.window ?? options.window, {
          write,
        });
        if (!negotiated.ok) throw HttpProblem.from(negotiated);
        version = negotiated.value.version;
        // Deprecation and Sunset, when they apply, were set for every response by the app's fetch wrapper.
      }
      let params: unknown;
      if (r.params) {
        const p = v.safeParse(r.params as v.GenericSchema, c.req.param());
        if (!p.success) throw new HttpProblem('error.not_found', 'No such resource.');
        params = p.output;
      }
      let query: unknown;
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
          if (guest === null)
            throw new HttpProblem('error.auth.session_invalid', 'The upload token is not valid for this upload.');
          principal = guest;
        } else {
          principal = await bearerCaller(authorization, requestHeader(c, 'x-svc-act-as'), options);
        }
      }
      // A route that checks its own credentials resolves a Bearer token here too: act-as is decided in one place.
      const caller = r.optionalAuth === true || r.callerFromBearer === true ? optionalCaller(c, options) : NO_CALLER;
      // GETs and uploads read no body here: skipping the call saves a microtask on the hot path.
      const body = r.body === undefined || r.body.type === 'bytes' ? undefined : await readBody(c, r.body);
      // After the body: a malformed request answers 400 whether local sign-in is on or not.
      if (localRefused)
        throw new HttpProblem(
          'error.auth.local_disabled',
          'Local sign-in is turned off on this server; sign in through its OpenID provider.',
        );
      // Awaited rather than returned: handing back a pending promise from an async function costs
      // two more turns of the microtask queue.
      const noStoreSet = r.noStore === true && withNoStore(c);
      const res = await handle({ c, body, params, query, principal, caller, version } as never);
      if (r.noStore === true && !noStoreSet) res.headers.set('cache-control', 'no-store');
      return res;
    });
  }
}

/**
 * The caller behind a Bearer token: the one place a token is resolved and acting as a sponsored
 * account decided, for `auth` routes and for `optionalAuth` routes alike. Refusals throw: 401
 * without a usable token, 403 `error.auth.not_an_owner` for an account the caller does not own.
 */
async function bearerCaller(
  authorization: string | undefined,
  actAs: string | undefined,
  options: MountOptions,
): Promise<Principal> {
  const token = bearerToken(authorization);
  if (token === null)
    throw new HttpProblem('error.auth.session_invalid', 'An access token is required (Authorization: Bearer).');
  let who: Result<Principal, 'error.auth.session_invalid'>;
  try {
    who = await options.authenticate(token);
  } catch (cause) {
    throw authFailure(cause);
  }
  if (!who.ok) throw HttpProblem.from(who);
  // Without the header it costs one property read.
  if (actAs === undefined || !options.actAs) return who.value;
  const acting = await options.actAs(who.value, actAs);
  if (!acting.ok) throw HttpProblem.from(acting);
  return acting.value;
}

const NO_CALLER = async (): Promise<Principal | null> => null;

/** An `optionalAuth` route's caller: none without a Bearer token, otherwise resolved as on `auth` routes. */
function optionalCaller(c: Context, options: MountOptions): () => Promise<Principal | null> {
  return async () => {
    const authorization = requestHeader(c, 'authorization');
    if (bearerToken(authorization) === null) return null;
    return bearerCaller(authorization, requestHeader(c, 'x-svc-act-as'), options);
  };
}

/**
 * What a known path allows, for the 405 answer. Looked up only when no route matched (from the app's
 * notFound handler), so each request that does match finds exactly one handler and Hono skips its
 * middleware composition.
 */
export function allowedMethods(routes: readonly AnyRoute[]): (path: string) => string | null {
  const byPath = new Map<string, Set<string>>();
  for (const r of routes) {
    const methods = (byPath.get(r.path) ?? new Set<string>()).add(r.method);
    // HEAD is answered for every GET (app.ts), so a 405's Allow names it too (RFC 9110 §15.5.6).
    if (r.method === 'GET') methods.add('HEAD');
    byPath.set(r.path, methods);
  }
  const table = [...byPath].map(([path, methods]) => ({
    // Hono's `:name` matches one non-empty segment; nothing else in our paths is special.
    pattern: new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}$`),
    allow: [...methods].join(', '),
  }));
  return (path) => table.find((t) => t.pattern.test(path))?.allow ?? null;
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
