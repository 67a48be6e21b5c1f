import * as v from 'valibot';
import { QUOTA_ALERTS, QUOTA_STATES, type QuotaStatus } from '@strongroom/core';
import type { AppDeps } from '../deps.js';
import { isoOrNull, json } from '../http/respond.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { Bytes, Timestamp } from './schemas.js';

const QuotaBody = v.object({
  used: v.pipe(Bytes, v.description('Charged bytes plus open reservations; the state follows it')),
  reserved: v.pipe(Bytes, v.description('Bytes held by open upload sessions (part of used)')),
  soft_limit: v.nullable(Bytes),
  hard_limit: v.pipe(v.nullable(Bytes), v.description('null = unlimited')),
  state: v.picklist(QUOTA_STATES),
  grace_expires_at: v.pipe(
    v.nullable(Timestamp),
    v.description('When HardExceeded turns GraceExpired; null below the hard limit'),
  ),
  alerts: v.array(v.picklist(QUOTA_ALERTS)),
});
named('Quota', QuotaBody);
const quotaBody = (q: QuotaStatus) => ({
  used: q.used,
  reserved: q.reserved,
  soft_limit: q.softLimit,
  hard_limit: q.hardLimit,
  state: q.state,
  grace_expires_at: isoOrNull(q.graceExpiresAt),
  alerts: q.alerts,
});

/** GET /quota: the caller's (or its sponsor's) quota, derived from the ledger and the clock. */
export function quotaRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'GET',
      path: '/quota',
      tag: 'quota',
      summary: "The caller's storage quota (a sponsored account sees its sponsor's, which it spends)",
      auth: true,
      responses: { 200: { description: 'Usage, limits, state and alerts', schema: QuotaBody } },
      handle: async ({ c, principal }) => json(c, 200, quotaBody(await deps.quota.status(principal.accountId))),
    }),
  ];
}
