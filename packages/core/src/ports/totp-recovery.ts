import type { SessionRecord } from './session-ledger.js';

/** The store side of second-factor recovery through the identity anchor (the master key). */
export interface TotpRecoveryStore {
  /**
   * In one atomic step: deletes the account's confirmed second factor and inserts `session` (a
   * fresh session of that account), stamping the account's `credentialsChangedAt` with the
   * session's `createdAt` (a recovery is a credential change). False, and nothing changed, when the account has no confirmed
   * factor (disabled meanwhile, or never had one).
   */
  recoverTotp(accountId: string, session: SessionRecord): Promise<boolean>;
}
