import * as v from 'valibot';
import type { AppDeps } from '../deps.js';
import { named } from '../http/schema-names.js';
import { route, type AnyRoute } from '../http/route-def.js';
import { iso, json, noContent, unwrap } from '../http/respond.js';
import { Timestamp, Uuid } from './schemas.js';

const SessionList = v.object({
  sessions: v.array(
    named(
      'Session',
      v.object({
        session_id: Uuid,
        created_at: Timestamp,
        last_used_at: Timestamp,
        expires_at: Timestamp,
        cohort_hash: v.nullable(v.string()),
        current: v.boolean(),
        method: v.picklist(['password', 'oidc']),
      }),
    ),
  ),
  cohorts: v.array(named('Cohort', v.object({ cohort_hash: v.string(), first_seen: Timestamp, last_seen: Timestamp }))),
});
named('SessionList', SessionList);

/** Listing and revoking the caller's sessions. */
export function sessionRoutes(deps: AppDeps): AnyRoute[] {
  return [
    route({
      method: 'GET',
      path: '/v1/auth/sessions',
      tag: 'sessions',
      summary: 'Active sessions of the account, and its device-cohort map',
      auth: true,
      responses: { 200: { description: 'Sessions and cohorts', schema: SessionList } },
      handle: async ({ c, principal }) => {
        const { sessions, cohorts } = await deps.sessions.list(principal);
        return json(c, 200, {
          sessions: sessions.map((s) => ({
            session_id: s.sessionId,
            created_at: iso(s.createdAt),
            last_used_at: iso(s.lastUsedAt),
            expires_at: iso(s.expiresAt),
            cohort_hash: s.cohortHash,
            current: s.current,
            method: s.method,
          })),
          cohorts: cohorts.map((k) => ({
            cohort_hash: k.cohortHash,
            first_seen: iso(k.firstSeen),
            last_seen: iso(k.lastSeen),
          })),
        });
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/auth/sessions/:session_id',
      tag: 'sessions',
      summary: 'Revoke one session of the account (any active session may do it)',
      auth: true,
      write: false,
      params: v.object({ session_id: Uuid }),
      responses: { 204: { description: 'Closed; its access tokens are refused from the next request' } },
      errors: ['error.not_found'],
      handle: async ({ c, params, principal }) => {
        unwrap(await deps.sessions.revoke(principal, params.session_id));
        return noContent(c);
      },
    }),
  ];
}
