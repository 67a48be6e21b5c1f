import * as v from 'valibot';
import { checkReadiness } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { HttpProblem } from '../http/problem.js';
import { bytes, json } from '../http/respond.js';
import { route, type AnyRoute } from '../http/route-def.js';

const Status = v.object({ status: v.literal('ok') });

/**
 * For orchestrators and Prometheus: liveness, readiness and metrics. None needs the protocol header
 * or a token. /metrics holds only aggregate counts; restrict it at the reverse proxy if it should
 * not be public.
 */
export function operationsRoutes(deps: AppDeps): AnyRoute[] {
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
      summary: 'Readiness: 200 when the database answers, its schema is the one this build expects and no durable write has failed',
      auth: false,
      versioned: false,
      responses: { 200: { description: 'Ready for traffic.', schema: Status } },
      errors: ['error.store.unavailable'],
      handle: async ({ c }) => {
        // A failed fsync: what reached the disk is unknown until a restart recovers from the log.
        if (deps.stores.durability?.lost()) throw new HttpProblem('error.store.unavailable', 'A durable write failed; this process is stopping for a restart.');
        const ready = await checkReadiness(deps.stores.schema);
        // Counted as a database error where every problem is counted (the app's onError).
        if (!ready.ok) throw HttpProblem.from(ready);
        return json(c, 200, { status: 'ok' });
      },
    }),
    route({
      method: 'GET',
      path: '/metrics',
      tag: 'operations',
      summary: 'Prometheus metrics (text exposition format 0.0.4)',
      auth: false,
      versioned: false,
      responses: {
        200: {
          description:
            'Requests by method, route template and status; latency histograms; sign-ins by outcome; refusals by code; database errors; process metrics. No label holds an account id, address, token or path id.',
          contentType: 'text/plain',
          schema: v.pipe(v.string(), v.description('Prometheus text exposition format 0.0.4')),
        },
      },
      handle: async ({ c }) => bytes(c, 200, new TextEncoder().encode(await deps.metrics.render()), deps.metrics.contentType),
    }),
  ];
}
