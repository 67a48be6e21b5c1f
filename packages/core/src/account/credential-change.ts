import { holds, type RowFilter } from '../filters/filter.js';
import type { AccountRecord, PasswordChange } from '../ports/account-store.js';
import type { SessionRecord } from '../ports/session-ledger.js';

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

/**
 * The sessions a change of the account's credentials closes (parameter `accountId`): every open
 * session of the account. Revoke-all and an operator's lock or revoke-sessions close these.
 */
export const CREDENTIAL_CHANGE_CLOSES: RowFilter<'accountId' | 'closedAt' | 'id'> = [
  { op: '=', field: 'accountId', param: 'accountId' },
  { op: 'isNull', field: 'closedAt' },
];

/**
 * The sessions a password change closes (parameters `accountId` and `sessionId`, as PasswordChange
 * names them): the account's open sessions but the caller's, which stays open under a new token in
 * the same store step.
 */
export const PASSWORD_CHANGE_CLOSES: RowFilter<'accountId' | 'closedAt' | 'id'> = [
  ...CREDENTIAL_CHANGE_CLOSES,
  { op: '<>', field: 'id', param: 'sessionId' },
];

/** Whether this password change closes this session: what a store's statement applies row by row. */
export function closedByPasswordChange(
  session: Pick<SessionRecord, 'accountId' | 'closedAt' | 'id'>,
  change: Pick<PasswordChange, 'accountId' | 'sessionId'>,
): boolean {
  return holds(PASSWORD_CHANGE_CLOSES, session, { accountId: change.accountId, sessionId: change.sessionId });
}

/** Whether a credential change of `accountId` closes this session. */
export function closedByCredentialChange(
  session: Pick<SessionRecord, 'accountId' | 'closedAt' | 'id'>,
  accountId: string,
): boolean {
  return holds(CREDENTIAL_CHANGE_CLOSES, session, { accountId });
}
