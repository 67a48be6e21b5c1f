import { guard, refuse, type Result } from '../errors.js';
import type { AccountErasureStore, ErasureOutcome } from '../ports/account-erasure.js';
import type { AccountStore } from '../ports/account-store.js';
import type { Clock } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import type { SponsorshipStore } from '../ports/sponsorship-store.js';
import type { QuotaPolicy } from '../quota/machine.js';
import type { Principal, SessionService } from '../session/service.js';
import { decideDeletionCaller } from './rules.js';

export interface AccountDeletionServiceDeps {
  readonly erasure: AccountErasureStore;
  readonly accounts: Pick<AccountStore, 'findAccountById' | 'findAccountByAddress'>;
  readonly sponsorship: Pick<SponsorshipStore, 'findSponsored'>;
  /** Deleting the account is the last change a stolen token could make: it needs a recent credential proof. */
  readonly sessions: Pick<SessionService, 'requireRecentAuthentication'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly policy: QuotaPolicy;
}

export type DeletionRefusal =
  | 'error.not_found'
  | 'error.auth.not_an_owner'
  | 'error.auth.session_invalid'
  | 'error.auth.reauthentication_required';
const STORE = 'error.store.unavailable' as const;

/**
 * Account deletion: one operation with two doors, the account's own (`DELETE /v1/auth/account`,
 * recent authentication) and the operator's (`cli delete-account`). Both end in `#erase`: one
 * store call, one transaction, whose plan is core's `planErasure`.
 */
export class AccountDeletionService {
  readonly #d: AccountDeletionServiceDeps;
  constructor(deps: AccountDeletionServiceDeps) {
    this.#d = deps;
  }

  /** The caller deletes its account (acting as a sponsored account: its sponsor deletes that one). */
  async deleteOwn(caller: Principal): Promise<Result<ErasureOutcome, DeletionRefusal>> {
    const record =
      caller.actingOwnerId === undefined
        ? null
        : await guard(STORE, 'sponsorship read', () => this.#d.sponsorship.findSponsored(caller.accountId));
    const may = decideDeletionCaller(caller, record);
    if (!may.ok) return may;
    const recent = await this.#d.sessions.requireRecentAuthentication(caller, 'account_delete');
    if (!recent.ok) return recent;
    return this.#erase(caller.accountId, 'account');
  }

  /** The operator deletes an account named by its id or by its address key (normalised address). */
  async deleteByOperator(
    account: { readonly id: string } | { readonly addressKey: string },
  ): Promise<Result<ErasureOutcome, 'error.not_found'>> {
    const id =
      'id' in account
        ? account.id
        : ((await guard(STORE, 'account read', () => this.#d.accounts.findAccountByAddress(account.addressKey)))?.id ??
          null);
    if (id === null) return refuse('error.not_found', 'No account has this address.');
    return this.#erase(id, 'operator');
  }

  async #erase(accountId: string, by: 'account' | 'operator'): Promise<Result<ErasureOutcome, 'error.not_found'>> {
    const done = await guard(STORE, 'deleting an account', () =>
      this.#d.erasure.eraseAccount(accountId, this.#d.policy, this.#d.clock.now()),
    );
    if (done.ok)
      this.#d.logger.info('account.deleted', {
        by,
        accounts: done.value.erased.length,
        cancelled_uploads: done.value.cancelledUploads.length,
        purged_assets: done.value.purgedAssets,
      });
    return done;
  }
}
