import { Hono } from 'hono';
import { CoreError } from '@strongroom/core';
import type { AppDeps } from './deps.js';
import { openApiDocument } from './http/openapi.js';
import { HttpProblem, problemResponse } from './http/problem.js';
import { json, responseHeaders, type ResponseHeaders } from './http/respond.js';
import { allowedMethods, mountRoutes, type AnyRoute } from './http/route.js';
import { authRoutes } from './routes/auth.js';
import { totpRoutes } from './routes/totp.js';
import { quotaRoutes } from './routes/quota.js';
import { albumRoutes } from './routes/albums.js';
import { deviceRoutes } from './routes/devices.js';
import { sessionRoutes } from './routes/sessions.js';
import { wellKnownRoutes } from './routes/well-known.js';
import { discoveryRoutes } from './routes/discovery.js';

export type { AppDeps } from './deps.js';

/** Every route group. Each area adds one line. */
function allRoutes(deps: AppDeps): AnyRoute[] {
  return [
    ...authRoutes(deps),
    ...totpRoutes(deps),
    ...deviceRoutes(deps),
    ...albumRoutes(deps),
    ...sessionRoutes(deps),
    ...wellKnownRoutes(deps),
    ...quotaRoutes(deps),
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
  const window = deps.window;
  const protocolHeaders = {
    'x-svc-protocol-min': window.min,
    'x-svc-protocol-max': window.max,
    'x-svc-min-client-build': deps.config.minClientBuild,
  };
  const headers = responseHeaders(protocolHeaders);

  mountRoutes(app, routes, { window, authenticate: (token) => deps.sessions.authenticate(token) });

  const doc = openApiDocument(routes, { baseUrl: deps.config.baseUrl, window });
  app.get('/openapi.json', (c) => json(c, 200, doc));

  const allowed = allowedMethods(routes);
  app.notFound((c) => {
    const allow = allowed(c.req.path);
    if (allow === null) return problemResponse(new HttpProblem('error.not_found', 'No such resource.'), protocolHeaders);
    return problemResponse(new HttpProblem('error.request.method_not_allowed', `This resource supports ${allow}.`), { ...protocolHeaders, allow });
  });

  app.onError((err) => {
    if (err instanceof HttpProblem) {
      return problemResponse(err, { ...protocolHeaders, ...err.headers });
    }
    if (err instanceof CoreError && (err.code === 'error.auth.unavailable' || err.code === 'error.store.unavailable')) {
      deps.logger.error('store.unavailable', { code: err.code, error: String((err.cause as Error)?.message ?? err.message) });
      return problemResponse(new HttpProblem(err.code, 'A backing store is unavailable; nothing was changed. Try again shortly.'), protocolHeaders);
    }
    deps.logger.error('http.unhandled', { error: String(err?.message ?? err), code: err instanceof CoreError ? err.code : undefined });
    return problemResponse(new HttpProblem('error.internal', 'Something went wrong on our side.'), protocolHeaders);
  });

  // Logging and the protocol headers wrap fetch rather than sitting in a Hono middleware: one
  // middleware layer cost a sixth of an authenticated request's throughput.
  const dispatch = app.fetch.bind(app);
  app.fetch = async (request: Request, env?: unknown, ctx?: Parameters<typeof dispatch>[2]): Promise<Response> => {
    const started = performance.now();
    // Every response is built by the helpers in http/respond.ts or problemResponse, which take the
    // protocol headers from the environment as ready-made plain objects (cheaper than setting them
    // on each response here). @hono/node-server makes a fresh environment object per request, so
    // adding to it is safe.
    const bindings = (env ?? {}) as { responseHeaders?: ResponseHeaders };
    bindings.responseHeaders = headers;
    const res = await dispatch(request, bindings, ctx);
    // One structured line per request. Never headers or bodies: they carry tokens and passwords.
    deps.logger.info('http.request', {
      method: request.method,
      path: pathOf(request.url),
      status: res.status,
      ms: Math.round((performance.now() - started) * 10) / 10,
    });
    return res;
  };

  return app;
}

/** The path of an absolute request URL, without parsing it whole. */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  if (start < 0) return '/';
  const query = url.indexOf('?', start);
  return url.slice(start, query < 0 ? undefined : query);
}
