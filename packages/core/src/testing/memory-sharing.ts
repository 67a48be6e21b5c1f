import type { MemorySyncLog } from './memory-sync.js';
import { linkChanges } from '../sync/changes.js';
import type { Result } from '../errors.js';
import type { AccountRecord } from '../ports/account-store.js';
import { decideSponsorChange, type SponsorFacts } from '../sponsorship/rules.js';
import type { MemoryQuotaStore } from './memory-quota-store.js';
import type { MemoryStore } from './memory-store.js';
import type { DropRecord, LinkRecord, LinkStore } from '../ports/link-store.js';
import type { SponsoredRecord, SponsorshipStore } from '../ports/sponsorship-store.js';

/**
 * In-memory reference implementation of the sponsorship store. Creating a sponsored account also
 * writes the account and the ledger row, so it holds the account and quota stores it writes to.
 */
export class MemorySponsorshipStore implements SponsorshipStore {
  readonly records = new Map<string, SponsoredRecord>();
  constructor(readonly stores: { accounts: MemoryStore; quota: MemoryQuotaStore }) {}

  /** Checks every write before making any, and never awaits between them, so it is all or nothing. */
  async createSponsoredAccount(input: {
    account: AccountRecord;
    sponsorId: string;
  }): Promise<Result<void, 'error.sponsored.cannot_sponsor'>> {
    const { accounts, quota } = this.stores;
    const { account, sponsorId } = input;
    // A new account pays for nobody and has no record yet.
    const verdict = decideSponsorChange({
      accountId: account.id,
      sponsor: { accountId: sponsorId, ...this.#sponsorFacts(sponsorId) },
      payees: 0,
      record: null,
    });
    if (!verdict.ok) return verdict;
    if (
      accounts.accounts.has(account.id) ||
      [...accounts.accounts.values()].some((a) => a.addressKey === account.addressKey)
    )
      throw new Error(`account ${account.id} exists`);
    if (this.records.has(account.id)) throw new Error(`sponsored account ${account.id} exists`);
    accounts.accounts.set(account.id, account);
    quota.sponsorRow(account.id, sponsorId);
    this.records.set(account.id, {
      accountId: account.id,
      sponsorId,
      createdAt: account.createdAt,
      owners: [sponsorId],
    });
    return verdict;
  }

  async setSponsor(
    accountId: string,
    sponsorId: string | null,
  ): Promise<Result<void, 'error.sponsored.cannot_sponsor'>> {
    const { quota } = this.stores;
    const payees = [...quota.accounts.values()].filter((r) => r.sponsorId === accountId).length;
    const verdict = decideSponsorChange({
      accountId,
      sponsor: sponsorId === null ? null : { accountId: sponsorId, ...this.#sponsorFacts(sponsorId) },
      payees,
      record: this.records.get(accountId) ?? null,
    });
    if (verdict.ok) quota.sponsorRow(accountId, sponsorId);
    return verdict;
  }

  #sponsorFacts(sponsorId: string): SponsorFacts {
    return {
      record: this.records.get(sponsorId) ?? null,
      ledgerSponsorId: this.stores.quota.accounts.get(sponsorId)?.sponsorId ?? null,
    };
  }

  async createSponsored(r: { accountId: string; sponsorId: string; createdAt: number }): Promise<void> {
    if (this.records.has(r.accountId)) throw new Error(`sponsored account ${r.accountId} exists`);
    this.records.set(r.accountId, { ...r, owners: [r.sponsorId] });
  }
  async findSponsored(accountId: string): Promise<SponsoredRecord | null> {
    return this.records.get(accountId) ?? null;
  }
  async listOwnedBy(ownerId: string): Promise<SponsoredRecord[]> {
    return [...this.records.values()]
      .filter((r) => r.owners.includes(ownerId))
      .sort((a, b) => a.createdAt - b.createdAt || (a.accountId < b.accountId ? -1 : 1));
  }
  async addOwner(accountId: string, ownerId: string): Promise<boolean> {
    const r = this.records.get(accountId);
    if (!r) return false;
    if (!r.owners.includes(ownerId)) this.records.set(accountId, { ...r, owners: [...r.owners, ownerId] });
    return true;
  }
  async removeOwner(accountId: string, ownerId: string): Promise<boolean> {
    const r = this.records.get(accountId);
    if (!r?.owners.includes(ownerId)) return false;
    this.records.set(accountId, { ...r, owners: r.owners.filter((o) => o !== ownerId) });
    return true;
  }
}

/** In-memory reference implementation of the link store. Each method runs without awaiting, so it is atomic. */
export class MemoryLinkStore implements LinkStore {
  /** By `idHash`. */
  readonly links = new Map<string, LinkRecord>();
  readonly drops = new Map<string, DropRecord>();
  /** The sync log link creation appends to in the same step (createMemoryPorts wires it). */
  sync: MemorySyncLog | null = null;

  async createLink(link: LinkRecord): Promise<void> {
    if (this.links.has(link.idHash)) throw new Error('a link is stored under this hash already');
    this.links.set(link.idHash, link);
    this.sync?.append(link.ownerId, linkChanges(link.idHash, link.revokedAt !== null), link.createdAt);
  }
  async findLink(idHash: string): Promise<LinkRecord | null> {
    return this.links.get(idHash) ?? null;
  }
  async listLinks(ownerId: string): Promise<LinkRecord[]> {
    return [...this.links.values()]
      .filter((l) => l.ownerId === ownerId)
      .sort((a, b) => a.createdAt - b.createdAt || (a.idHash < b.idHash ? -1 : 1));
  }
  async findDrop(uploadId: string): Promise<DropRecord | null> {
    return this.drops.get(uploadId) ?? null;
  }
  async listDrops(linkIdHash: string): Promise<DropRecord[]> {
    return [...this.drops.values()]
      .filter((d) => d.linkIdHash === linkIdHash)
      .sort((a, b) => a.createdAt - b.createdAt || (a.uploadId < b.uploadId ? -1 : 1));
  }
  async listClearLinkIds(): Promise<string[]> {
    return [...this.links.values()].filter((l) => l.sealedId === null).map((l) => l.idHash);
  }
  /** Nothing outlives a deleted entry in memory. */
  async purgeMovedLinkIds(): Promise<void> {}
}
