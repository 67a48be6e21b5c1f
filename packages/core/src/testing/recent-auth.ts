import { ok, refuse, type Result } from '../errors.js';
import type { SessionService } from '../session/service.js';

type RecentAuthGate = Pick<SessionService, 'requireRecentAuthentication'>;

/** A session that proved a credential a moment ago: every action of RECENT_AUTH_ACTIONS is admitted. */
export const freshSession: RecentAuthGate = {
  requireRecentAuthentication: async (): Promise<Result<void, 'error.auth.reauthentication_required'>> => ok(undefined),
};

/** A session past its reauthentication window: every action of RECENT_AUTH_ACTIONS is refused. */
export const staleSession: RecentAuthGate = {
  requireRecentAuthentication: async (): Promise<Result<void, 'error.auth.reauthentication_required'>> =>
    refuse('error.auth.reauthentication_required', 'This change needs a recent sign-in; reauthenticate first.'),
};
