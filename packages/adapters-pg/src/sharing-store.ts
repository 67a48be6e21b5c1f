import { and, asc, eq, isNull, sql } from 'drizzle-orm';
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
import { isDeadlock, retrying, rowsOf, type PgDb } from './db.js';
import { createLedgerRows } from './quota-store.js';
import { appendSyncChanges } from './sync-store.js';
import { accounts } from './schema/accounts.js';
import { quotaAccounts, uploadSessions } from './schema/quota.js';
import { linkDrops, links, sponsoredAccounts, sponsoredOwners } from './schema/sharing.js';
import { syncChanges } from './schema/sync.js';

type LinkRow = typeof links.$inferSelect;
export const toLink = (r: LinkRow): LinkRecord => ({ ...r, assetIds: JSON.parse(r.assetIds) as string[] });

/** How often a sponsor change runs before a deadlock it was chosen to break is final. */
const SPONSOR_CHANGE_ATTEMPTS = 3;

/** Sponsored accounts and their owners over PostgreSQL. */
export class PgSponsorshipStore implements SponsorshipStore {
  constructor(readonly db: PgDb) {}

  async #owners(db: PgDb, accountId: string): Promise<string[]> {
    const rows = await db
      .select({ o: sponsoredOwners.ownerId })
      .from(sponsoredOwners)
      .where(eq(sponsoredOwners.accountId, accountId))
      .orderBy(asc(sponsoredOwners.seq));
    return rows.map((r) => r.o);
  }

  /**
   * Not retried on deadlock, unlike setSponsor and the quota writers, because it cannot be part of
   * one. The only row it locks that another transaction can reach is the sponsor's ledger row, and
   * it locks that row first. After that it waits for nobody: every later write is keyed by the new
   * account's id, which no other transaction can name yet, so no unique check waits, and the one
   * foreign key (owners to sponsored_accounts) points at the row it has just written. So it only
   * ever waits while holding nothing that a writer waits for, and it cannot close a cycle: a
   * setSponsor, an opening or revocation paid by the sponsor, or a sweep queues on that row, or
   * this transaction queues behind it. A new lock taken after the ledger row would end this.
   */
  async createSponsoredAccount(input: {
    account: AccountRecord;
    sponsorId: string;
  }): Promise<Result<void, 'error.sponsored.cannot_sponsor'>> {
    const { account, sponsorId } = input;
    return this.db.transaction(async (tx): Promise<Result<void, 'error.sponsored.cannot_sponsor'>> => {
      // The sponsor's ledger row, made to exist (an empty row is the zero record) and locked, so an
      // operator making it someone's payee meanwhile waits for this transaction or is seen by it.
      await this.#lockLedgerRows(tx, [sponsorId]);
      // A new account pays for nobody and has no record yet.
      const verdict = decideSponsorChange({
        accountId: account.id,
        sponsor: { accountId: sponsorId, ...(await this.#sponsorFacts(tx, sponsorId)) },
        payees: 0,
        record: null,
      });
      if (!verdict.ok) return verdict;
      await tx.insert(accounts).values(account);
      await tx
        .insert(quotaAccounts)
        .values({ accountId: account.id, sponsorId })
        .onConflictDoUpdate({ target: quotaAccounts.accountId, set: { sponsorId } });
      await tx.insert(sponsoredAccounts).values({ accountId: account.id, sponsorId, createdAt: account.createdAt });
      await tx.insert(sponsoredOwners).values({ accountId: account.id, ownerId: sponsorId, seq: 0 });
      return verdict;
    });
  }
  async setSponsor(
    accountId: string,
    sponsorId: string | null,
  ): Promise<Result<void, 'error.sponsored.cannot_sponsor'>> {
    // A change PostgreSQL chose to break a deadlock (a writer taking quota rows out of key order,
    // as a last attempt may) was rolled back whole: it runs again, as openings and edits do.
    return retrying(SPONSOR_CHANGE_ATTEMPTS, isDeadlock, () => this.#setSponsorOnce(accountId, sponsorId));
  }
  async #setSponsorOnce(
    accountId: string,
    sponsorId: string | null,
  ): Promise<Result<void, 'error.sponsored.cannot_sponsor'>> {
    return this.db.transaction(async (tx): Promise<Result<void, 'error.sponsored.cannot_sponsor'>> => {
      // Both ledger rows locked (in id order, so two changes never wait on each other crosswise):
      // a change of either's payer, or a sponsored account created by either, waits for this
      // transaction or is seen by it; the facts below are read after the locks are held.
      await this.#lockLedgerRows(tx, sponsorId === null ? [accountId] : [accountId, sponsorId]);
      const [payees] = await tx
        .select({ n: sql<number>`count(*)::int` })
        .from(quotaAccounts)
        .where(eq(quotaAccounts.sponsorId, accountId));
      const sponsor =
        sponsorId === null ? null : { accountId: sponsorId, ...(await this.#sponsorFacts(tx, sponsorId)) };
      const [record] = await tx.select().from(sponsoredAccounts).where(eq(sponsoredAccounts.accountId, accountId));
      const verdict = decideSponsorChange({
        accountId,
        sponsor,
        payees: payees?.n ?? 0,
        record: record ? { ...record, owners: await this.#owners(tx, accountId) } : null,
      });
      if (!verdict.ok) return verdict;
      await tx.update(quotaAccounts).set({ sponsorId }).where(eq(quotaAccounts.accountId, accountId));
      return verdict;
    });
  }

  /** Makes each account's ledger row exist (an empty row is the zero record) and locks them, in id order. */
  async #lockLedgerRows(tx: PgDb, accountIds: readonly string[]): Promise<void> {
    const ids = [...new Set(accountIds)].sort();
    await createLedgerRows(tx, ids);
    for (const id of ids)
      await tx
        .select({ id: quotaAccounts.accountId })
        .from(quotaAccounts)
        .where(eq(quotaAccounts.accountId, id))
        .for('update');
  }

  /** What core's sponsor rules read of a would-be sponsor (call with its ledger row locked). */
  async #sponsorFacts(tx: PgDb, sponsorId: string): Promise<SponsorFacts> {
    const [ledger] = await tx
      .select({ sponsorId: quotaAccounts.sponsorId })
      .from(quotaAccounts)
      .where(eq(quotaAccounts.accountId, sponsorId));
    const [record] = await tx.select().from(sponsoredAccounts).where(eq(sponsoredAccounts.accountId, sponsorId));
    return {
      record: record ? { ...record, owners: await this.#owners(tx, sponsorId) } : null,
      ledgerSponsorId: ledger?.sponsorId ?? null,
    };
  }

  async createSponsored(r: { accountId: string; sponsorId: string; createdAt: number }): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.insert(sponsoredAccounts).values(r);
      await tx.insert(sponsoredOwners).values({ accountId: r.accountId, ownerId: r.sponsorId, seq: 0 });
    });
  }
  async findSponsored(accountId: string): Promise<SponsoredRecord | null> {
    const [r] = await this.db.select().from(sponsoredAccounts).where(eq(sponsoredAccounts.accountId, accountId));
    return r ? { ...r, owners: await this.#owners(this.db, accountId) } : null;
  }
  async listOwnedBy(ownerId: string): Promise<SponsoredRecord[]> {
    const rows = await this.db
      .select({
        accountId: sponsoredAccounts.accountId,
        sponsorId: sponsoredAccounts.sponsorId,
        createdAt: sponsoredAccounts.createdAt,
      })
      .from(sponsoredOwners)
      .innerJoin(sponsoredAccounts, eq(sponsoredAccounts.accountId, sponsoredOwners.accountId))
      .where(eq(sponsoredOwners.ownerId, ownerId))
      .orderBy(asc(sponsoredAccounts.createdAt), asc(sponsoredAccounts.accountId));
    const out: SponsoredRecord[] = [];
    for (const r of rows) out.push({ ...r, owners: await this.#owners(this.db, r.accountId) });
    return out;
  }
  async addOwner(accountId: string, ownerId: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      // The account row serialises owner additions, so their order (seq) is well defined.
      const [acct] = await tx
        .select()
        .from(sponsoredAccounts)
        .where(eq(sponsoredAccounts.accountId, accountId))
        .for('update');
      if (!acct) return false;
      const [next] = await rowsOf<{ n: string | number }>(
        tx,
        sql`SELECT coalesce(max(${sponsoredOwners.seq}), 0) + 1 AS n FROM ${sponsoredOwners} WHERE ${sponsoredOwners.accountId} = ${accountId}`,
      );
      await tx
        .insert(sponsoredOwners)
        .values({ accountId, ownerId, seq: Number(next?.n ?? 1) })
        .onConflictDoNothing();
      return true;
    });
  }
  async removeOwner(accountId: string, ownerId: string): Promise<boolean> {
    const r = await this.db
      .delete(sponsoredOwners)
      .where(and(eq(sponsoredOwners.accountId, accountId), eq(sponsoredOwners.ownerId, ownerId)))
      .returning({ o: sponsoredOwners.ownerId });
    return r.length === 1;
  }
}

/**
 * Links and drops over PostgreSQL. `reserveDrop` takes the link row FOR UPDATE and decides with
 * core's `decideDropReservation` on it, so concurrent guests of one link queue on that lock.
 */
export class PgLinkStore implements LinkStore {
  constructor(readonly db: PgDb) {}

  async createLink(link: LinkRecord): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.insert(links).values({ ...link, assetIds: JSON.stringify(link.assetIds) });
      await appendSyncChanges(tx, link.ownerId, linkChanges(link.idHash, link.revokedAt !== null), link.createdAt);
    });
  }
  async findLink(idHash: string): Promise<LinkRecord | null> {
    const [r] = await this.db.select().from(links).where(eq(links.idHash, idHash));
    return r ? toLink(r) : null;
  }
  async listLinks(ownerId: string): Promise<LinkRecord[]> {
    return (
      await this.db
        .select()
        .from(links)
        .where(eq(links.ownerId, ownerId))
        .orderBy(asc(links.createdAt), asc(links.idHash))
    ).map(toLink);
  }
  async findDrop(uploadId: string): Promise<DropRecord | null> {
    const [r] = await this.db.select().from(linkDrops).where(eq(linkDrops.uploadId, uploadId));
    return r ?? null;
  }
  async listDrops(linkIdHash: string): Promise<DropRecord[]> {
    return this.db
      .select()
      .from(linkDrops)
      .where(eq(linkDrops.linkIdHash, linkIdHash))
      .orderBy(asc(linkDrops.createdAt), asc(linkDrops.uploadId));
  }
  async listClearLinkIds(): Promise<string[]> {
    return (await this.db.select({ id: links.idHash }).from(links).where(isNull(links.sealedId))).map((r) => r.id);
  }
  /**
   * A move deletes the clear row and updates its drops, sessions and sync-log entry: their old
   * versions, clear id included, stay in the tables' and indexes' pages until vacuumed, which autovacuum may put off
   * for long on a small table. VACUUM prunes them now (a snapshot still open elsewhere may keep a
   * version for autovacuum to take later). The write-ahead log keeps them until it is recycled.
   */
  async purgeMovedLinkIds(): Promise<void> {
    await this.db.execute(sql`VACUUM ${links}, ${linkDrops}, ${uploadSessions}, ${syncChanges}`);
  }
}
