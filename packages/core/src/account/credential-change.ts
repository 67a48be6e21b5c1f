import type { AccountRecord } from '../ports/account-store.js';

/**
 * What counts as a change of the account's credentials: each closes sessions (a password change
 * all but the caller's, revoke-all every one, recovery and a lock none) and, in the same store
 * step, stamps the account's `credentialsChangedAt`.
 */
export const CREDENTIAL_CHANGES = ['password_change', 'revoke_all', 'totp_recovery', 'operator_lock'] as const;
export type CredentialChange = (typeof CREDENTIAL_CHANGES)[number];

/**
 * What a credential change ends besides the sessions it closes: everything in flight that was
 * opened with the old state. Each is judged by {@link outlivesCredentialChange} where it is
 * redeemed: a second-factor challenge at verify-totp and recover-totp, a login code at OpenID
 * complete, a flow the account started at the OpenID callback.
 */
export const ENDED_BY_CREDENTIAL_CHANGE = ['second_factor_challenge', 'oidc_login_code', 'oidc_flow'] as const;
export type EndedByCredentialChange = (typeof ENDED_BY_CREDENTIAL_CHANGE)[number];

/**
 * Was something opened at `openedAt` for this account opened after its credentials last changed?
 * A missing account outlives nothing. Opened in the very millisecond of the change counts as after
 * it: the change's own transaction is what any later opening reads.
 */
export function outlivesCredentialChange(
  openedAt: number,
  account: Pick<AccountRecord, 'credentialsChangedAt'> | null,
): boolean {
  if (account === null) return false;
  return account.credentialsChangedAt === null || openedAt >= account.credentialsChangedAt;
}
