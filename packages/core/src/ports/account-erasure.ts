import type { Result } from '../errors.js';
import type { QuotaPolicy } from '../quota/machine.js';

/** What one account deletion ended, for the caller's log and the operator's answer. */
export interface ErasureOutcome {
  /** The accounts deleted: the one asked for first, then the sponsored accounts it paid for. */
  readonly erased: readonly string[];
  /** Upload sessions (drops among them) cancelled, their reservations released. */
  readonly cancelledUploads: readonly string[];
  /** Assets deleted; their bytes stay charged until the GC sweep credits whoever the ledger charged. */
  readonly purgedAssets: number;
}

/**
 * Deleting an account, in ONE transaction. The store reads the facts core's `planErasure` asks for
 * (the account and whether it is deleted already, its own sponsorship record, the sponsored
 * accounts it sponsors, the accounts whose ledger row names it as payer), asks it, and then, for
 * every account of the plan: closes its sessions; deletes its second factor (enrollment,
 * challenges, wrong-code record), OpenID links, login codes and flows, device directory, devices,
 * revoke-all challenges, cohort map and sync log; retires its handle (the row stays, unpublished, so the name
 * can never be claimed again); revokes its links, and the capability tokens minted for it that
 * `revokedByErasure` names; cancels the upload sessions `cancelledByErasure` names (drops through
 * its links among them), releasing their reservations as a cancel does; deletes every asset it
 * owns (core's lifecycle, action `erase`) and the federated cache entries it received; removes its
 * sponsorship record and every co-ownership it held; and clears the account row's address,
 * password and display name, stamping it deleted, so the address may register again as a new
 * account. Ledger rows stay: the sweep credits the bytes to whoever each blob is charged to.
 * Registered accounts the plan names in `unsponsor` pay for themselves again.
 * Sign-in tickets, when this build has them, are voided in the same transaction (each adapter's
 * `voidSignInTickets`). An account deleted already is deleted again (see `planErasure`), keeping
 * its first deletion's stamp. Refused (`error.not_found`: no such account), nothing is written.
 */
export interface AccountErasureStore {
  eraseAccount(accountId: string, policy: QuotaPolicy, now: number): Promise<Result<ErasureOutcome, 'error.not_found'>>;
}
