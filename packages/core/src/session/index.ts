export { SessionService, newSessionToken, sessionTokenHash } from './service.js';
export type { SessionServiceDeps, TokenPair, AccessGrant, Principal, SessionView } from './service.js';
export {
  DEFAULT_SESSION_POLICY,
  afterIssuance,
  decideAccess,
  decideIssuance,
  needsTouch,
  sessionExpiresAt,
  sessionStatus,
} from './machine.js';
export type { SessionPolicy, SessionStatus } from './machine.js';
export { RECENT_AUTH_ACTIONS, DEFAULT_REAUTH_WINDOW_MS, decideRecentAuthentication } from './recent-auth.js';
export type { RecentAuthAction } from './recent-auth.js';
