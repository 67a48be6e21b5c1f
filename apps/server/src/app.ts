import { Hono, type Context } from 'hono';
import { CoreError, isProtocolVersion } from '@strongroom/core';
import type { AppDeps } from './deps.js';
import { openApiDocument } from './http/openapi.js';
import { mountDocs } from './http/docs.js';
import { publicRecord, RECORD_MAX_AGE_S } from './http/public-record.js';
import { headAnswer } from './http/head.js';
import { blobRoutes } from './routes/blobs.js';
import { HttpProblem, problemResponse } from './http/problem.js';
import type { ResponseHeaders } from './http/respond.js';
import { challengeFor, readsAuthorization, schemesOf, TOKEN_REFUSALS, type Scheme } from './http/challenge.js';
import { allowedMethods, mountRoutes, type ProtocolBindings } from './http/mount.js';
import type { AnyRoute } from './http/route-def.js';
import { authRoutes } from './routes/auth.js';
import { totpRoutes } from './routes/totp.js';
import { secondFactorRoutes } from './routes/second-factor.js';
import { quotaRoutes } from './routes/quota.js';
import { uploadRoutes } from './routes/uploads.js';
import { tusRoutes } from './routes/tus.js';
import { assetRoutes } from './routes/assets.js';
import { oidcRoutes } from './routes/oidc.js';
import { albumRoutes } from './routes/albums.js';
import { deviceRoutes } from './routes/devices.js';
import { sessionRoutes } from './routes/sessions.js';
import { wellKnownRoutes } from './routes/well-known.js';
import { operationsRoutes } from './routes/operations.js';
import { Cors } from './http/cors.js';
import type { HttpMetrics, RouteStats } from './http/metrics.js';
import { sharingRoutes } from './routes/sharing.js';
import { syncRoutes } from './routes/sync.js';
import { discoveryRoutes } from './routes/discovery.js';
import { failureForLog } from './logs/failure.js';

export type { AppDeps } from './deps.js';
export { keepEveryHeaderLine } from './http/request.js';

/** Every route group. Each area adds one line. Exported for tests that walk the route table (the authorization matrix). */
export function allRoutes(deps: AppDeps): AnyRoute[] {
  return [
    ...authRoutes(deps),
    ...totpRoutes(deps),
    ...deviceRoutes(deps),
    ...albumRoutes(deps),
    ...sessionRoutes(deps),
    ...wellKnownRoutes(deps),
    ...quotaRoutes(deps),
    ...uploadRoutes(deps),
    ...tusRoutes(deps),
    ...assetRoutes(deps),
    ...operationsRoutes(deps),
    ...secondFactorRoutes(deps),
    ...oidcRoutes(deps),
    ...sharingRoutes(deps),
    ...syncRoutes(deps),
    ...blobRoutes(deps),
    ...discoveryRoutes(deps),
  ];
}

/**
 * The HTTP face of the core: validates, negotiates the protocol version, authenticates, calls one
 * core operation and maps its result. Holds no state of its own, so any number of processes can
 * serve one database.
 */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  const routes = allRoutes(deps);
  const protocol = deps.protocol;
  // The protocol headers of the moment a request arrives (its Min follows announced deprecations
  // as time passes); set on the request's environment by the fetch wrapper below.
  const protocolHeadersOf = (c: Context): Record<string, string> =>
    (
      (c.env as { responseHeaders?: ResponseHeaders } | undefined)?.responseHeaders ??
      protocol.fast(deps.clock.now())?.headers
    )?.protocol ?? {};

  mountRoutes(
    app,
    routes.map((r) => instrumented(r, deps.metrics)),
    {
      window: deps.window,
      authenticate: (token) => deps.sessions.authenticate(token),
      actAs: (principal, target) => deps.sponsorship.actAs(principal, target),
      guest: (token, uploadId) => deps.links.guest(token, uploadId),
      localAuth: deps.config.authLocal,
    },
  );

  const doc = openApiDocument(routes, {
    baseUrl: deps.config.baseUrl,
    window: { min: deps.config.protocolMin, max: deps.config.protocolMax },
  });
  app.get('/openapi.json', (c) => publicRecord(c, doc, RECORD_MAX_AGE_S.openApi));
  mountDocs(app, () => protocol.headers.protocol);

  const allowed = allowedMethods(routes);
  // The 401 challenge of each route, looked up by the template Hono matched (only when refusing).
  const challenges = new Map<string, { schemes: Scheme[]; header: boolean; optional: boolean }>(
    routes.map((r) => [
      `${r.method} ${r.path}`,
      { schemes: schemesOf(r), header: readsAuthorization(r), optional: r.optionalAuth === true },
    ]),
  );
  // A peer's 401 passed on says nothing against the caller's own token: no error="invalid_token";
  // nor, where the token is optional, a 401 refusing something else than the token.
  const challengeOf = (c: Context, err: HttpProblem): string => {
    const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
    const found = challenges.get(`${method} ${c.req.routePath}`) ?? {
      schemes: ['Bearer' as const],
      header: false,
      optional: false,
    };
    // A ledger that cannot be read refused nothing: the token may be good (RFC 6750 section 3).
    const ownTokenRefused =
      !err.relayedFromPeer &&
      err.code !== 'error.auth.unavailable' &&
      (!found.optional || TOKEN_REFUSALS.has(err.code));
    return challengeFor(found.schemes, ownTokenRefused ? c.req.header('authorization') : undefined, found.header);
  };
  app.notFound((c) => {
    const protocolHeaders = protocolHeadersOf(c);
    const allow = allowed(c.req.path);
    deps.metrics.refused(allow === null ? 'error.not_found' : 'error.request.method_not_allowed');
    if (allow === null)
      return problemResponse(new HttpProblem('error.not_found', 'No such resource.'), protocolHeaders);
    return problemResponse(new HttpProblem('error.request.method_not_allowed', `This resource supports ${allow}.`), {
      ...protocolHeaders,
      allow,
    });
  });

  app.onError((err, c) => {
    const protocolHeaders = protocolHeadersOf(c);
    // Refused before the handler ran (protocol, path, token, body): find the route Hono matched.
    const bindings = c.env as Bindings | undefined;
    if (bindings !== undefined && bindings.stats === undefined)
      bindings.stats = deps.metrics.lookup(c.req.method, c.req.routePath);
    countProblem(deps.metrics, err);
    if (err instanceof HttpProblem) {
      // Every 401 names the scheme it wants (RFC 9110 section 11.6.1, RFC 6750 section 3).
      const challenge: Record<string, string> = err.status === 401 ? { 'www-authenticate': challengeOf(c, err) } : {};
      return problemResponse(err, { ...protocolHeaders, ...err.headers, ...challenge });
    }
    if (err instanceof CoreError && err.code === 'error.server.busy') {
      // Load shed before any work: the client may try again in a second.
      return problemResponse(new HttpProblem(err.code, err.message), { ...protocolHeaders, 'retry-after': '1' });
    }
    if (err instanceof CoreError && (err.code === 'error.auth.unavailable' || err.code === 'error.store.unavailable')) {
      deps.logger.error('store.unavailable', { code: err.code, error: failureForLog(err) });
      return problemResponse(
        new HttpProblem(err.code, 'A backing store is unavailable; nothing was changed. Try again shortly.'),
        protocolHeaders,
      );
    }
    deps.logger.error('http.unhandled', {
      error: failureForLog(err),
      code: err instanceof CoreError ? err.code : undefined,
    });
    return problemResponse(new HttpProblem('error.internal', 'Something went wrong on our side.'), protocolHeaders);
  });

  // Logging and the protocol headers wrap fetch rather than sitting in a Hono middleware: every
  // request would pass through the layer's closure and extra promise, for work that needs neither.
  const dispatch = app.fetch.bind(app);
  const cors =
    deps.config.corsOrigins.length > 0 ? new Cors(deps.config.corsOrigins, () => protocol.headers.protocol) : null;
  const preflights = deps.metrics.statsFor('OPTIONS', 'preflight');
  /** Answers an allowed origin's preflight itself, and marks every answer to a cross-origin request. */
  const withCors = async (
    cors: Cors,
    request: Request,
    bindings: Bindings,
    ctx: Parameters<typeof dispatch>[2],
  ): Promise<Response> => {
    const origin = headerOf(request, bindings, 'origin');
    if (origin === undefined) return dispatch(request, bindings, ctx);
    const allowed = cors.allows(origin);
    if (
      allowed &&
      request.method === 'OPTIONS' &&
      headerOf(request, bindings, 'access-control-request-method') !== undefined
    ) {
      bindings.stats = preflights;
      return cors.preflight(origin, headerOf(request, bindings, 'access-control-request-headers') ?? null);
    }
    return cors.decorate(await dispatch(request, bindings, ctx), allowed ? origin : null);
  };
  app.fetch = async (request: Request, env?: unknown, ctx?: Parameters<typeof dispatch>[2]): Promise<Response> => {
    const started = performance.now();
    // Every response is built by the helpers in http/respond.ts or problemResponse, which take the
    // protocol headers from the environment as ready-made plain objects (cheaper than setting them
    // on each response here). @hono/node-server makes a fresh environment object per request, so
    // adding to it is safe. The moment is shared by all requests until the next announced instant
    // or the next due re-read of the announcements: normally one comparison, no await.
    const now = deps.clock.now();
    let moment = protocol.fast(now);
    if (moment === null) {
      try {
        moment = await protocol.at(now);
      } catch (err) {
        // Only when the cached announcements are too old to trust and cannot be re-read: better
        // refuse than judge a request by a window that may miss an announcement now in force.
        deps.logger.error('store.unavailable', { code: 'error.store.unavailable', error: failureForLog(err) });
        return problemResponse(
          new HttpProblem(
            'error.store.unavailable',
            'A backing store is unavailable; nothing was changed. Try again shortly.',
          ),
          protocol.headers.protocol,
        );
      }
    }
    const bindings = (env ?? {}) as Bindings;
    bindings.responseHeaders = moment.headers;
    bindings.protocol = moment;
    bindings.stats = undefined;
    // Below an announced, not yet effective Min, every response says when it ends (spec §14.15:
    // clients learn it from any response), whatever answers it: a route, the router's 404 or
    // 405, a public record, a health probe.
    if (moment.pending.length > 0) {
      const version = headerOf(request, bindings, 'x-svc-protocol');
      const notice = version !== undefined && isProtocolVersion(version) ? moment.noticeHeaders(version) : null;
      if (notice !== null) bindings.responseHeaders = notice;
    }
    // HEAD is answered as the GET it stands for, without the body but with its Content-Length.
    const res =
      request.method === 'HEAD'
        ? await headAnswer(dispatch, request, bindings, ctx)
        : cors === null
          ? await dispatch(request, bindings, ctx)
          : await withCors(cors, request, bindings, ctx);
    // A request refused before its body was read (no token, wrong type, too large): close the
    // connection after the answer. Keeping it alive would leave Node draining the unread body
    // while the client reuses the socket, which it then sees reset (found by the property test).
    // Told to Node's response directly: the Response itself is left as built.
    const incoming = bindings.incoming as { readableEnded?: boolean } | undefined;
    if (
      incoming !== undefined &&
      incoming.readableEnded === false &&
      request.method !== 'GET' &&
      request.method !== 'HEAD'
    ) {
      const outgoing = (
        bindings as { outgoing?: { headersSent: boolean; setHeader(name: string, value: string): void } }
      ).outgoing;
      if (outgoing !== undefined && !outgoing.headersSent) outgoing.setHeader('connection', 'close');
    }
    // Only numbers bumped in place (see http/metrics.ts); the label is the route template.
    const elapsedMs = performance.now() - started;
    (bindings.stats ?? deps.metrics.unmatched).record(res.status, elapsedMs / 1000);
    // One structured line per request. Never headers or bodies: they carry tokens and passwords.
    // Never the path either: a link id in it is a bearer capability. The route's template
    // (`/v1/links/:link_id`) says which operation ran; a request no route matched is `unmatched`.
    deps.logger.info('http.request', {
      method: request.method,
      route: (bindings.stats ?? deps.metrics.unmatched).route,
      status: res.status,
      ms: Math.round(elapsedMs * 10) / 10,
    });
    return res;
  };

  return app;
}

/** What the fetch wrapper shares with handlers through Hono's environment. */
interface Bindings extends ProtocolBindings {
  responseHeaders?: ResponseHeaders;
  /** The metrics of the route that answered; unset for unmatched requests. */
  stats?: RouteStats | undefined;
  /** Node's IncomingMessage, on @hono/node-server. */
  incoming?: { headers: Record<string, string | string[] | undefined> };
}

/** A request header, from Node's raw headers when serving (cheaper than Request.headers, see requestHeader). */
function headerOf(request: Request, bindings: Bindings, name: string): string | undefined {
  if (bindings.incoming === undefined) return request.headers.get(name) ?? undefined;
  const value = bindings.incoming.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Wraps a route's handler so a request that reaches it is counted under the route's template. */
function instrumented(r: AnyRoute, metrics: HttpMetrics): AnyRoute {
  const stats = metrics.statsFor(r.method, r.path);
  const handle = r.handle;
  return {
    ...r,
    handle: (input) => {
      (input.c.env as Bindings).stats = stats;
      return handle(input);
    },
  };
}

/** Counts a problem answer by code; an unavailable store is also a database error. */
function countProblem(metrics: HttpMetrics, err: unknown): void {
  // A peer's refusal passed on is counted as one label, whatever code the peer chose: a peer must
  // not be able to grow this process's label set, nor count as a database error here.
  if (err instanceof HttpProblem && err.relayedFromPeer) return metrics.refused('peer_refusal');
  const code = err instanceof HttpProblem || err instanceof CoreError ? err.code : 'error.internal';
  const unavailable = code === 'error.auth.unavailable' || code === 'error.store.unavailable';
  metrics.refused(unavailable || err instanceof HttpProblem ? code : 'error.internal');
  if (unavailable) metrics.databaseError();
}
