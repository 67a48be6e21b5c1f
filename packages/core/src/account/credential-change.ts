import type { AccountRecord } from '../ports/account-store.js';

/**
 * A change of the account's credentials (a password change, revoke-all, second-factor recovery, an
 * operator's lock) closes sessions and, in the same store step, stamps `credentialsChangedAt`. It
 * also ends what was opened under the old state, judged here where each is redeemed: a
 * second-factor challenge at verify-totp and recover-totp, a login code at OpenID complete, a flow
 * the account started at the OpenID callback.
 *
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
