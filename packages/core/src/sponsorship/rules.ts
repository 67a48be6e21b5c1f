import { ok, refuse, type Result } from '../errors.js';
import type { SponsoredRecord } from '../ports/sponsorship-store.js';

/**
 * Who may act as whom: the one rule behind `X-Svc-Act-As`. An account may act as a sponsored
 * account it owns (its sponsor or an added owner); anything else (another account's sponsored
 * account, a registered account, an unknown id) is the same refusal, so the answer never tells
 * whether the id exists.
 */
export function decideActAs(callerId: string, target: SponsoredRecord | null): Result<void, 'error.auth.not_an_owner'> {
  if (target?.owners.includes(callerId)) return ok(undefined);
  return refuse('error.auth.not_an_owner', 'The caller is not an owner of this sponsored account.');
}

/** A sponsored account (one acted as, or found in the store) cannot sponsor, nor own another. */
export function decideSponsor(
  caller: { actingOwnerId?: string },
  callerRecord: SponsoredRecord | null,
): Result<void, 'error.sponsored.cannot_sponsor'> {
  if (caller.actingOwnerId !== undefined || callerRecord !== null) {
    return refuse('error.sponsored.cannot_sponsor', 'A sponsored account cannot sponsor or own another account.');
  }
  return ok(undefined);
}

/** What the store reads of a would-be sponsor, inside the transaction that creates the account. */
export interface SponsorFacts {
  /** The sponsor's own sponsorship record: non-null when it is itself a sponsored account. */
  readonly record: SponsoredRecord | null;
  /** The sponsor's payer in the quota ledger (null when it pays for itself). */
  readonly ledgerSponsorId: string | null;
}

/**
 * Whether a registered account may create a sponsored account, on facts read in the creating
 * transaction (so a sponsor made someone's payee meanwhile is seen). Acting as someone is refused
 * before, by `decideSponsor`.
 */
export function decideSponsorCreation(sponsor: SponsorFacts): Result<void, 'error.sponsored.cannot_sponsor'> {
  const registered = decideSponsor({}, sponsor.record);
  if (!registered.ok) return registered;
  // An account the operator made someone else's payee (CLI `sponsor`) pays through them: it cannot pay for another.
  if (sponsor.ledgerSponsorId !== null)
    return refuse('error.sponsored.cannot_sponsor', 'An account sponsored by another cannot sponsor.');
  return ok(undefined);
}

/** What the store reads, in the transaction that sets who pays for `accountId` (the operator's `sponsor`). */
export interface SponsorChangeFacts {
  readonly accountId: string;
  /** The new payer and its facts; null: the account pays for itself. */
  readonly sponsor: (SponsorFacts & { readonly accountId: string }) | null;
  /** How many accounts pay through `accountId` now (their ledger rows name it as their sponsor). */
  readonly payees: number;
  /** `accountId`'s own sponsorship record: non-null when it was created as a sponsored account. */
  readonly record: SponsoredRecord | null;
}

/**
 * Who pays for whom is one level deep (spec §8.4: a sponsored account's uploads count
 * against its sponsor, and there is no separate sponsoree quota): the payer pays for itself, by the
 * same rule as creating a sponsored account (`decideSponsorCreation`), and the account being put
 * under it pays for nobody, else those it pays for would be charged to a row that is itself charged
 * elsewhere and no one would be "the payer". A sponsored account is paid for by the account that
 * created it, for as long as it exists (its record's sponsor, who stays an owner): that payer is
 * never changed or ended. Checked on facts read in the writing transaction.
 */
export function decideSponsorChange(change: SponsorChangeFacts): Result<void, 'error.sponsored.cannot_sponsor'> {
  if (change.record !== null && change.sponsor?.accountId !== change.record.sponsorId) {
    return refuse(
      'error.sponsored.cannot_sponsor',
      `A sponsored account is paid for by the account that created it (${change.record.sponsorId}); that cannot be changed or ended.`,
    );
  }
  if (change.sponsor === null) return ok(undefined);
  if (change.sponsor.accountId === change.accountId)
    return refuse('error.sponsored.cannot_sponsor', 'An account cannot sponsor itself.');
  const payer = decideSponsorCreation(change.sponsor);
  if (!payer.ok) return payer;
  if (change.payees > 0) {
    return refuse(
      'error.sponsored.cannot_sponsor',
      `An account that sponsors others (${change.payees}) cannot be sponsored: they would pay through an account that does not pay.`,
    );
  }
  return ok(undefined);
}

/**
 * Removing an owner: any owner may remove any other owner, or itself; the sponsor stays (it pays
 * for the account's writes, so it cannot be removed while it sponsors it).
 */
export function decideOwnerRemoval(
  callerId: string,
  record: SponsoredRecord | null,
  ownerId: string,
): Result<void, 'error.auth.not_an_owner' | 'error.not_found' | 'error.conflict'> {
  const may = decideActAs(callerId, record);
  if (!may.ok) return may;
  if (ownerId === record!.sponsorId) return refuse('error.conflict', 'The sponsor cannot be removed from the owners.');
  if (!record!.owners.includes(ownerId)) return refuse('error.not_found', 'That account is not an owner.');
  return ok(undefined);
}

/**
 * A sponsored account has no identity of its own (spec §1.7, §3.15, §7.6: its profile's
 * address, display name and handle are null, and writes made as it name a device of the acting
 * owner's directory). Acting as one, nothing that would give it one is admitted: a handle, a public
 * record, a display name, a device directory (an identity anchor), a way to sign in or a proof of
 * one (an OpenID link or reauthentication).
 */
export function decideOwnIdentity(caller: {
  readonly actingOwnerId?: string | undefined;
}): Result<void, 'error.sponsored.no_identity'> {
  if (caller.actingOwnerId === undefined) return ok(undefined);
  return refuse(
    'error.sponsored.no_identity',
    'A sponsored account has no identity of its own: no handle, public record, display name, device directory or way to sign in.',
  );
}
