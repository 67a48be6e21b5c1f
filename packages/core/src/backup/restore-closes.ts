import type { Clock } from '../ports/clock.js';
import type { ClosedByRestore, DeploymentStore } from '../ports/deployment.js';
import type { SignInThrottleStore } from '../ports/sign-in-throttle.js';

/**
 * What a restore closes. A restored deployment is the deployment as of the backup, and a restore
 * cannot know what its owners revoked after the backup was taken: a stolen session they closed
 * since would come back. So, unless the operator keeps them (`--keep-sessions`), a restore ends
 * every way in that was open at the backup, for every account, in one store transaction:
 * - every open session (closed at the restore's time);
 * - every pending second-factor challenge and revoke-all challenge;
 * - every unredeemed OpenID login code and every OpenID flow still open;
 * - every account's credentials are marked changed at that time, so whatever else was opened
 *   before it is judged stale by `outlivesCredentialChange`;
 * - every sign-in ticket is voided.
 * Nothing else changes: accounts, passwords, factors, keys, directories, the ledger and the blobs
 * stay as backed up, so every owner signs in again with what they had.
 */
export const CLOSED_BY_RESTORE = [
  'session',
  'second_factor_challenge',
  'revoke_all_challenge',
  'oidc_login_code',
  'oidc_flow',
  'sign_in_ticket',
] as const;

export interface RestoreClosing extends ClosedByRestore {
  /** When it was done (the restore's time), or null when the operator kept the sessions. */
  readonly at: number | null;
  readonly signInTickets: number;
}

/** Applies the rule above to a restored deployment's stores; `keepSessions` leaves everything open. */
export async function closeRestoredDeployment(
  stores: {
    readonly deployment: Pick<DeploymentStore, 'closeEverythingForRestore'>;
    readonly signIn: Pick<SignInThrottleStore, 'voidAllSignInTickets'>;
  },
  clock: Clock,
  options: { keepSessions: boolean },
): Promise<RestoreClosing> {
  if (options.keepSessions)
    return {
      at: null,
      sessions: 0,
      secondFactorChallenges: 0,
      revokeAllChallenges: 0,
      oidcLoginCodes: 0,
      oidcFlows: 0,
      signInTickets: 0,
    };
  const at = clock.now();
  const closed = await stores.deployment.closeEverythingForRestore(at);
  // The stamp above already ends every ticket (one holds only under its account's stamp); voiding
  // them removes them, and counts them for the operator.
  const signInTickets = await stores.signIn.voidAllSignInTickets();
  return { at, ...closed, signInTickets };
}
