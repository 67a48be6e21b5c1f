import type { SessionRecord } from '../ports/session-ledger.js';
import type { TotpRecoveryStore } from '../ports/totp-recovery.js';
import type { TotpThrottleStore } from '../ports/totp-throttle.js';
import {
  claimCodeCheck,
  refundCodeCheck,
  type CodeCheckAdmission,
  type TotpThrottleState,
} from '../second-factor/throttle.js';
import type { MemoryStore } from './memory-store.js';
import type { MemoryTotpStore } from './memory-totp-store.js';

/**
 * The in-memory reference for the wrong-code record and recovery. It reaches into the memory
 * account and TOTP stores it is built over, as the SQL stores share one database; each method runs
 * without awaiting, so it is atomic.
 */
export class MemorySecondFactorStore implements TotpThrottleStore, TotpRecoveryStore {
  readonly throttles = new Map<string, TotpThrottleState>();

  constructor(readonly over: { readonly totp: MemoryTotpStore; readonly ledger: MemoryStore }) {}

  async findTotpThrottle(accountId: string): Promise<TotpThrottleState | null> {
    return this.throttles.get(accountId) ?? null;
  }

  async claimTotpCodeCheck(accountId: string, at: number): Promise<CodeCheckAdmission> {
    const { admission, next } = claimCodeCheck(this.throttles.get(accountId) ?? null, at);
    if (next !== null) this.throttles.set(accountId, next);
    return admission;
  }

  async refundTotpCodeCheck(accountId: string, at: number): Promise<void> {
    const state = this.throttles.get(accountId);
    if (state !== undefined) this.throttles.set(accountId, refundCodeCheck(state, at));
  }

  async recoverTotp(accountId: string, session: SessionRecord): Promise<boolean> {
    if (this.over.totp.enrollments.get(accountId)?.state !== 'confirmed') return false;
    this.over.totp.enrollments.delete(accountId);
    this.over.ledger.sessions.set(session.id, session);
    const account = this.over.ledger.accounts.get(accountId);
    if (account) this.over.ledger.accounts.set(accountId, { ...account, credentialsChangedAt: session.createdAt });
    return true;
  }
}
