import { ok, refuse, type Result } from '../errors.js';
import type { SessionRecord } from '../ports/session-ledger.js';
import { DEFAULT_REAUTH_WINDOW_MS } from './recent-auth.js';

/** Session lifetimes. Both expiries are judged only when an access token is issued. */
export interface SessionPolicy {
  /** Sliding inactivity expiry: no issuance for this long ends the session. */
  readonly idleMs: number;
  /** Hard expiry counted from issuance, never moved by use. */
  readonly maxMs: number;
  /** last-used is written at most once per this interval. */
  readonly touchIntervalMs: number;
  /** How long a proof of a credential lets the session change how the account signs in. */
  readonly reauthWindowMs: number;
}

const DAY = 86_400_000;
export const DEFAULT_SESSION_POLICY: SessionPolicy = {
  idleMs: 180 * DAY,
  maxMs: 365 * DAY,
  touchIntervalMs: 60_000,
  reauthWindowMs: DEFAULT_REAUTH_WINDOW_MS,
};

export type SessionStatus = 'open' | 'closed' | 'idle_expired' | 'hard_expired';

/** When the session stops being refreshable if nothing else happens. */
export function sessionExpiresAt(session: SessionRecord, policy: SessionPolicy): number {
  return Math.min(session.refreshedAt + policy.idleMs, session.createdAt + policy.maxMs);
}

export function sessionStatus(session: SessionRecord, now: number, policy: SessionPolicy): SessionStatus {
  if (session.closedAt !== null) return 'closed';
  if (now >= session.createdAt + policy.maxMs) return 'hard_expired';
  if (now >= session.refreshedAt + policy.idleMs) return 'idle_expired';
  return 'open';
}

/** May an access token be minted for this session now? Unknown, closed and expired look the same. */
export function decideIssuance(
  session: SessionRecord | null,
  now: number,
  policy: SessionPolicy,
): Result<SessionRecord, 'error.auth.session_invalid'> {
  if (session === null || sessionStatus(session, now, policy) !== 'open') {
    return refuse('error.auth.session_invalid', 'The session is unknown, closed or expired.');
  }
  return ok(session);
}

/**
 * May an access token issued at `issuedAt` for `accountId` be honoured? Only closure and the
 * access floor (a password change) refuse it: expiry is enforced at issuance, so a token minted
 * before its session expired lives out its own fifteen minutes.
 */
export function decideAccess<S extends Pick<SessionRecord, 'accountId' | 'closedAt' | 'accessFloor'>>(
  session: S | null,
  token: { accountId: string; issuedAt: number },
): Result<S, 'error.auth.session_invalid'> {
  if (
    session === null ||
    session.closedAt !== null ||
    session.accountId !== token.accountId ||
    token.issuedAt < session.accessFloor
  ) {
    return refuse('error.auth.session_invalid', 'The session behind this access token is no longer open.');
  }
  return ok(session);
}

/** Whether last-used is stale enough to be written again (coalescing to once a minute). */
export function needsTouch(session: Pick<SessionRecord, 'lastUsedAt'>, now: number, policy: SessionPolicy): boolean {
  return now - session.lastUsedAt >= policy.touchIntervalMs;
}
