import type Database from 'better-sqlite3';
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  linkChanges,
  decideSponsorChange,
  type SponsorFacts,
  type AccountRecord,
  type Result,
  type DropRecord,
  type LinkRecord,
  type LinkStore,
  type SponsoredRecord,
  type SponsorshipStore,
} from '@strongroom/core';
import { appendSyncChanges } from './sync-store.js';
import * as schema from './schema/index.js';
import { accounts, linkDrops, links, quotaAccounts, sponsoredAccounts, sponsoredOwners } from './schema/index.js';

type Db = BetterSQLite3Database<typeof schema>;
type LinkRow = typeof links.$inferSelect;

export const toLink = (r: LinkRow): LinkRecord => ({ ...r, assetIds: JSON.parse(r.assetIds) as string[] });

/** Sponsored accounts and their owners over SQLite. */
export class SqliteSponsorshipStore implements SponsorshipStore {
  readonly db: Db;
  constructor(readonly sqlite: Database.Database) {
    this.db = drizzle(sqlite, { schema });
  }

  #owners(accountId: string): string[] {
    return this.db
      .select({ o: sponsoredOwners.ownerId })
      .from(sponsoredOwners)
      .where(eq(sponsoredOwners.accountId, accountId))
      .orderBy(asc(sponsoredOwners.seq))
      .all()
      .map((r) => r.o);
  }

  /** BEGIN IMMEDIATE: the sponsor's facts are read under the write lock, so no payer change slips in. */
  async createSponsoredAccount(input: {
    account: AccountRecord;
    sponsorId: string;
  }): Promise<Result<void, 'error.sponsored.cannot_sponsor'>> {
    const { account, sponsorId } = input;
    return this.sqlite
      .transaction((): Result<void, 'error.sponsored.cannot_sponsor'> => {
        // A new account pays for nobody and has no record yet.
        const verdict = decideSponsorChange({
          accountId: account.id,
          sponsor: { accountId: sponsorId, ...this.#sponsorFacts(sponsorId) },
          payees: 0,
          record: null,
        });
        if (!verdict.ok) return verdict;
        this.db.insert(accounts).values(account).run();
        this.db
          .insert(quotaAccounts)
          .values({ accountId: account.id, sponsorId })
          .onConflictDoUpdate({ target: quotaAccounts.accountId, set: { sponsorId } })
          .run();
        this.db
          .insert(sponsoredAccounts)
          .values({ accountId: account.id, sponsorId, createdAt: account.createdAt })
          .run();
        this.db.insert(sponsoredOwners).values({ accountId: account.id, ownerId: sponsorId, seq: 0 }).run();
        return verdict;
      })
      .immediate();
  }
  /** BEGIN IMMEDIATE: both accounts' facts are read under the write lock, so no other payer change or creation slips in. */
  async setSponsor(
    accountId: string,
    sponsorId: string | null,
  ): Promise<Result<void, 'error.sponsored.cannot_sponsor'>> {
    return this.sqlite
      .transaction((): Result<void, 'error.sponsored.cannot_sponsor'> => {
        const payees =
          this.db
            .select({ n: sql<number>`count(*)` })
            .from(quotaAccounts)
            .where(eq(quotaAccounts.sponsorId, accountId))
            .get()?.n ?? 0;
        const record = this.db.select().from(sponsoredAccounts).where(eq(sponsoredAccounts.accountId, accountId)).get();
        const verdict = decideSponsorChange({
          accountId,
          sponsor: sponsorId === null ? null : { accountId: sponsorId, ...this.#sponsorFacts(sponsorId) },
          payees,
          record: record ? { ...record, owners: this.#owners(accountId) } : null,
        });
        if (!verdict.ok) return verdict;
        this.db
          .insert(quotaAccounts)
          .values({ accountId, sponsorId })
          .onConflictDoUpdate({ target: quotaAccounts.accountId, set: { sponsorId } })
          .run();
        return verdict;
      })
      .immediate();
  }

  /** What core's sponsor rules read of a would-be sponsor (call inside the writing transaction). */
  #sponsorFacts(sponsorId: string): SponsorFacts {
    const record = this.db.select().from(sponsoredAccounts).where(eq(sponsoredAccounts.accountId, sponsorId)).get();
    const ledger = this.db
      .select({ sponsorId: quotaAccounts.sponsorId })
      .from(quotaAccounts)
      .where(eq(quotaAccounts.accountId, sponsorId))
      .get();
    return {
      record: record ? { ...record, owners: this.#owners(sponsorId) } : null,
      ledgerSponsorId: ledger?.sponsorId ?? null,
    };
  }

  async createSponsored(r: { accountId: string; sponsorId: string; createdAt: number }): Promise<void> {
    this.sqlite
      .transaction(() => {
        this.db.insert(sponsoredAccounts).values(r).run();
        this.db.insert(sponsoredOwners).values({ accountId: r.accountId, ownerId: r.sponsorId, seq: 0 }).run();
      })
      .immediate();
  }
  async findSponsored(accountId: string): Promise<SponsoredRecord | null> {
    const r = this.db.select().from(sponsoredAccounts).where(eq(sponsoredAccounts.accountId, accountId)).get();
    return r ? { ...r, owners: this.#owners(accountId) } : null;
  }
  async listOwnedBy(ownerId: string): Promise<SponsoredRecord[]> {
    const rows = this.db
      .select({
        accountId: sponsoredAccounts.accountId,
        sponsorId: sponsoredAccounts.sponsorId,
        createdAt: sponsoredAccounts.createdAt,
      })
      .from(sponsoredOwners)
      .innerJoin(sponsoredAccounts, eq(sponsoredAccounts.accountId, sponsoredOwners.accountId))
      .where(eq(sponsoredOwners.ownerId, ownerId))
      .orderBy(asc(sponsoredAccounts.createdAt), asc(sponsoredAccounts.accountId))
      .all();
    return rows.map((r) => ({ ...r, owners: this.#owners(r.accountId) }));
  }
  async addOwner(accountId: string, ownerId: string): Promise<boolean> {
    return this.sqlite
      .transaction((): boolean => {
        if (!this.db.select().from(sponsoredAccounts).where(eq(sponsoredAccounts.accountId, accountId)).get())
          return false;
        const next = this.sqlite
          .prepare('SELECT coalesce(max(seq), 0) + 1 AS n FROM sponsored_owners WHERE account_id = ?')
          .get(accountId) as { n: number };
        this.db.insert(sponsoredOwners).values({ accountId, ownerId, seq: next.n }).onConflictDoNothing().run();
        return true;
      })
      .immediate();
  }
  async removeOwner(accountId: string, ownerId: string): Promise<boolean> {
    return (
      this.db
        .delete(sponsoredOwners)
        .where(and(eq(sponsoredOwners.accountId, accountId), eq(sponsoredOwners.ownerId, ownerId)))
        .run().changes === 1
    );
  }
}

/**
 * Links and drops over SQLite. `reserveDrop` runs BEGIN IMMEDIATE and decides with core's
 * `decideDropReservation` on the row as stored, so concurrent guests serialise on the write lock.
 */
export class SqliteLinkStore implements LinkStore {
  readonly db: Db;
  constructor(readonly sqlite: Database.Database) {
    this.db = drizzle(sqlite, { schema });
  }

  async createLink(link: LinkRecord): Promise<void> {
    this.sqlite
      .transaction(() => {
        this.db
          .insert(links)
          .values({ ...link, assetIds: JSON.stringify(link.assetIds) })
          .run();
        appendSyncChanges(this.sqlite, link.ownerId, linkChanges(link.idHash, link.revokedAt !== null), link.createdAt);
      })
      .immediate();
  }
  async findLink(idHash: string): Promise<LinkRecord | null> {
    const r = this.db.select().from(links).where(eq(links.idHash, idHash)).get();
    return r ? toLink(r) : null;
  }
  async listLinks(ownerId: string): Promise<LinkRecord[]> {
    return this.db
      .select()
      .from(links)
      .where(eq(links.ownerId, ownerId))
      .orderBy(asc(links.createdAt), asc(links.idHash))
      .all()
      .map(toLink);
  }
  async findDrop(uploadId: string): Promise<DropRecord | null> {
    return this.db.select().from(linkDrops).where(eq(linkDrops.uploadId, uploadId)).get() ?? null;
  }
  async listDrops(linkIdHash: string): Promise<DropRecord[]> {
    return this.db
      .select()
      .from(linkDrops)
      .where(eq(linkDrops.linkIdHash, linkIdHash))
      .orderBy(asc(linkDrops.createdAt), asc(linkDrops.uploadId))
      .all();
  }
  async listClearLinkIds(): Promise<string[]> {
    return this.db
      .select({ id: links.idHash })
      .from(links)
      .where(isNull(links.sealedId))
      .all()
      .map((r) => r.id);
  }
  /**
   * Each move overwrote what it deleted (rekeyLink's secure_delete); the old pages are still in the
   * write-ahead log until it is checkpointed, once for every move of the start: a checkpoint per
   * link made a start with thousands of links take minutes. Best effort: a reader elsewhere may
   * hold the log, and then a later checkpoint carries the zeroed pages over.
   */
  async purgeMovedLinkIds(): Promise<void> {
    if (!this.sqlite.inTransaction) this.sqlite.pragma('wal_checkpoint(TRUNCATE)');
  }
}
