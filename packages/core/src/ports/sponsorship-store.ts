import type { Result } from '../errors.js';
import type { AccountRecord } from './account-store.js';

/** A sponsored account: no address, password or factor; its owners act as it, its sponsor pays. */
export interface SponsoredRecord {
  readonly accountId: string;
  /** The registered account that created it and is charged for its writes. Never changes. */
  readonly sponsorId: string;
  readonly createdAt: number;
  /** Every account that may act as it, the sponsor included, oldest first. */
  readonly owners: readonly string[];
}

/** Sponsored accounts and their owners. "Not found" is null. */
export interface SponsorshipStore {
  /**
   * Creates a sponsored account in ONE transaction: its account row, its sponsor in the quota
   * ledger, and the sponsorship with the sponsor as first owner (created at `account.createdAt`).
   * Reads the sponsor's facts inside that transaction, serialised against a concurrent change of
   * the sponsor's payer, and applies core's `decideSponsorChange`; refused, nothing is written.
   * A failed write (an id already taken) throws and leaves nothing.
   */
  createSponsoredAccount(input: {
    account: AccountRecord;
    sponsorId: string;
  }): Promise<Result<void, 'error.sponsored.cannot_sponsor'>>;
  /**
   * Sets who pays for `accountId` in the quota ledger (null: it pays for itself), the operator's
   * `sponsor`. In ONE transaction it reads the facts (the sponsor's sponsorship record and ledger
   * payer, how many accounts pay through `accountId`, `accountId`'s own record), serialised against a concurrent change of
   * either account's payer and against a sponsored account being created by either, and applies
   * core's `decideSponsorChange`; refused, nothing is written.
   */
  setSponsor(accountId: string, sponsorId: string | null): Promise<Result<void, 'error.sponsored.cannot_sponsor'>>;
  /** Records a sponsorship row alone (its sponsor as first owner); no account row, no ledger. */
  createSponsored(record: { accountId: string; sponsorId: string; createdAt: number }): Promise<void>;
  findSponsored(accountId: string): Promise<SponsoredRecord | null>;
  /** The sponsored accounts `ownerId` owns (sponsor or added owner), oldest first. */
  listOwnedBy(ownerId: string): Promise<SponsoredRecord[]>;
  /** Adds an owner (idempotent). False when the account is not a sponsored one. */
  addOwner(accountId: string, ownerId: string, at: number): Promise<boolean>;
  /** Removes an owner. False when it was not one. */
  removeOwner(accountId: string, ownerId: string): Promise<boolean>;
}
