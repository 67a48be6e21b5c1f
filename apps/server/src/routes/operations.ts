import { createHash, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';
import { checkReadiness } from '@strongroom/core';
import { bearerToken } from '../http/credentials.js';
import { requestHeader } from '../http/request.js';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { bytes, json } from '../http/respond.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';

const Status = named('Status', v.object({ status: v.literal('ok') }));

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * Whether a request may read /metrics: always when no SVC_METRICS_TOKEN is set, else only with
 * `Authorization: Bearer <that token>`. Compared as SHA-256 digests in constant time, so neither
 * the token's bytes nor its length show in the timing.
 */
function metricsGate(token: string | null): (authorization: string | undefined) => boolean {
  if (token === null) return () => true;
  const expected = digest(token);
  return (authorization) => {
    const presented = bearerToken(authorization);
    return presented !== null && timingSafeEqual(digest(presented), expected);
  };
}

/**
 * For orchestrators and Prometheus: liveness, readiness and metrics. None needs the protocol header.
 * /metrics holds only aggregate counts; with SVC_METRICS_TOKEN set it needs that token as a Bearer,
 * without it is open and belongs behind the network boundary.
 */
export function operationsRoutes(deps: AppDeps): AnyRoute[] {
  const metricsToken = deps.config.metricsToken ?? null;
  const metricsAllowed = metricsGate(metricsToken);
  return [
    route({
      method: 'GET',
      path: '/healthz',
      tag: 'operations',
      summary: 'Liveness: 200 while the process serves requests (touches no database)',
      auth: false,
      versioned: false,
      responses: { 200: { description: 'The process is up.', schema: Status } },
      handle: ({ c }) => json(c, 200, { status: 'ok' }),
    }),
    route({
      method: 'GET',
      path: '/readyz',
      tag: 'operations',
      summary:
        'Readiness: 200 when the database answers, its schema is the one this build expects, the blob store answers and no durable write has failed; a 503 names the failing dependency (`dependency`: database or blob_store) and why (`reason`: unreachable, credentials, failed or schema)',
      auth: false,
      versioned: false,
      responses: { 200: { description: 'Ready for traffic.', schema: Status } },
      errors: ['error.store.unavailable'],
      handle: async ({ c }) => {
        // A failed fsync: what reached the disk is unknown until a restart recovers from the log.
        if (deps.stores.durability?.lost())
          throw new HttpProblem(
            'error.store.unavailable',
            'A durable write failed; this process is stopping for a restart.',
          );
        const ready = await checkReadiness(deps.stores.schema, deps.stores.blobs);
        // Counted as a database error where every problem is counted (the app's onError).
        if (!ready.ok) throw HttpProblem.from(ready);
        return json(c, 200, { status: 'ok' });
      },
    }),
    route({
      method: 'GET',
      path: '/metrics',
      tag: 'operations',
      // The reference states this server's own gate: open without SVC_METRICS_TOKEN, that token otherwise.
      summary:
        metricsToken === null
          ? 'Prometheus metrics (text exposition format 0.0.4). Open: this server sets no SVC_METRICS_TOKEN (with one set, only `Authorization: Bearer <that token>` reads them)'
          : 'Prometheus metrics (text exposition format 0.0.4), only for `Authorization: Bearer <SVC_METRICS_TOKEN>`',
      auth: false,
      security: metricsToken === null ? [] : ['metricsToken'],
      versioned: false,
      responses: {
        200: {
          description:
            'Requests by method, route template and status; latency histograms; sign-ins by outcome; refusals by code; database errors; the deployment totals (counted at most once a minute; with SVC_WORKERS, one scrape answers for every worker); process metrics. No label holds an account id, address, token or path id.',
          contentType: 'text/plain',
          schema: v.pipe(v.string(), v.description('Prometheus text exposition format 0.0.4')),
        },
      },
      errors: metricsToken === null ? [] : ['error.auth.invalid_credentials'],
      handle: async ({ c }) => {
        if (!metricsAllowed(requestHeader(c, 'authorization'))) {
          throw new HttpProblem(
            'error.auth.invalid_credentials',
            "This server's metrics need Authorization: Bearer <SVC_METRICS_TOKEN>.",
          );
        }
        return bytes(c, 200, new TextEncoder().encode(await deps.metrics.render()), deps.metrics.contentType);
      },
    }),
  ];
}
