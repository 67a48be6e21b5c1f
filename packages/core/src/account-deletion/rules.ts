import { ok, refuse, type Result } from '../errors.js';
import type { AccountRecord } from '../ports/account-store.js';
import type { MintedCapability } from '../ports/capability-revocations.js';
import type { SponsoredRecord } from '../ports/sponsorship-store.js';
import type { UploadSessionRecord } from '../ports/upload-sessions.js';
import { isOpenState } from '../upload/machine.js';

/** What a store reads, inside the deleting transaction, before it asks `planErasure`. */
export interface ErasureFacts {
  readonly accountId: string;
  /** Whether the account row exists, and whether it was deleted already. */
  readonly account: 'missing' | 'live' | 'deleted';
  /** The sponsored accounts whose sponsor (payer) is the account, in any order. */
  readonly sponsoredAccounts: readonly string[];
  /** The accounts whose ledger row names the account as payer (its sponsored accounts among them). */
  readonly ledgerPayees: readonly string[];
}

/** Whether an account row exists, and whether it was deleted. */
export function accountState(account: Pick<AccountRecord, 'deletedAt'> | null): ErasureFacts['account'] {
  if (account === null) return 'missing';
  return account.deletedAt == null ? 'live' : 'deleted';
}

/** A deleted account is no account: the operator's listing and the deployment's totals leave it out. */
export const isLiveAccount = (account: Pick<AccountRecord, 'deletedAt'>): boolean => accountState(account) === 'live';

export interface ErasurePlan {
  /** The accounts to delete: the one asked for first, then its sponsored accounts, sorted. */
  readonly accounts: readonly string[];
  /**
   * Registered accounts an operator made the account pay for (`cli sponsor`): they keep their
   * identity and their library, and pay for themselves from now on.
   */
  readonly unsponsor: readonly string[];
}

/**
 * Deleting an account deletes, the same way, every sponsored account it sponsors: a sponsored
 * account has no identity of its own and nobody left to pay for it. Sponsorship is one level deep
 * (a sponsored account sponsors nobody), so the plan never recurses. Co-ownerships the account
 * holds of others' sponsored accounts are removed, not the accounts.
 *
 * An account deleted already is deleted again (the operator's door: its own tokens are refused):
 * a request that passed authentication before the deletion committed may still have written one
 * thing for it afterwards (an upload session, a link, a sponsored account), and running the
 * deletion again ends that too. Usually it finds nothing.
 */
export function planErasure(facts: ErasureFacts): Result<ErasurePlan, 'error.not_found'> {
  if (facts.account === 'missing') return refuse('error.not_found', 'No such account.');
  const sponsored = [...new Set(facts.sponsoredAccounts)].filter((id) => id !== facts.accountId).sort();
  const erased = new Set([facts.accountId, ...sponsored]);
  const unsponsor = [...new Set(facts.ledgerPayees)].filter((id) => !erased.has(id)).sort();
  return ok({ accounts: [facts.accountId, ...sponsored], unsponsor });
}

/**
 * The upload sessions a deletion cancels: every session still in an open state (lapsed ones too:
 * they end now rather than at the next expiry pass) that a deleted account uploads or pays for,
 * drops opened through its links among them.
 */
export function cancelledByErasure(
  session: Pick<UploadSessionRecord, 'state' | 'uploaderId' | 'payerId'>,
  erased: ReadonlySet<string>,
): boolean {
  return isOpenState(session.state) && (erased.has(session.uploaderId) || erased.has(session.payerId));
}

/** A capability token minted for a deleted account is revoked unless it is revoked or expired already. */
export function revokedByErasure(
  token: Pick<MintedCapability, 'accountId' | 'expiresAt'> & { readonly revokedAt: number | null },
  erased: ReadonlySet<string>,
  now: number,
): boolean {
  return token.accountId != null && erased.has(token.accountId) && token.revokedAt === null && token.expiresAt > now;
}

/**
 * Who may delete an account through `DELETE /v1/auth/account`: a registered account deletes
 * itself; acting as a sponsored account, only its sponsor (who pays for it and created it) deletes
 * it. A co-owner acts as it for its library, but deleting it would take the sponsor's account from
 * the sponsor: it removes itself from the owners instead.
 */
export function decideDeletionCaller(
  caller: {
    readonly accountId: string;
    readonly actingOwnerId?: string | undefined;
    readonly guestUploadId?: string | undefined;
  },
  record: SponsoredRecord | null,
): Result<void, 'error.auth.not_an_owner' | 'error.auth.session_invalid'> {
  if (caller.guestUploadId !== undefined)
    return refuse('error.auth.session_invalid', 'A guest upload token deletes nothing.');
  if (caller.actingOwnerId === undefined) return ok(undefined);
  if (record === null || record.accountId !== caller.accountId || record.sponsorId !== caller.actingOwnerId) {
    return refuse('error.auth.not_an_owner', 'Only the sponsor of a sponsored account may delete it.');
  }
  return ok(undefined);
}
