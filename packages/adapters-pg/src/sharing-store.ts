import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import {
  decideDropReservation,
  decideIntake,
  type DropRecord,
  type DropReservation,
  type FederatedIntakeRecord,
  type FederatedIntakeStore,
  type IntakeOutcome,
  type LinkRecord,
  type LinkStore,
  type SponsoredRecord,
  type SponsorshipStore,
} from '@strongroom/core';
import { rowsOf, type PgDb } from './db.js';
import { federatedIntakes, linkDrops, links, sponsoredAccounts, sponsoredOwners } from './schema/sharing.js';

type LinkRow = typeof links.$inferSelect;
const OPEN = sql`('Pending', 'Uploading', 'WaitingForProcessing')`;
const toLink = (r: LinkRow): LinkRecord => ({ ...r, assetIds: JSON.parse(r.assetIds) as string[] });

/** Sponsored accounts and their owners over PostgreSQL. */
export class PgSponsorshipStore implements SponsorshipStore {
  constructor(readonly db: PgDb) {}

  async #owners(db: PgDb, accountId: string): Promise<string[]> {
    const rows = await db.select({ o: sponsoredOwners.ownerId }).from(sponsoredOwners).where(eq(sponsoredOwners.accountId, accountId)).orderBy(asc(sponsoredOwners.seq));
    return rows.map((r) => r.o);
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
      .select({ accountId: sponsoredAccounts.accountId, sponsorId: sponsoredAccounts.sponsorId, createdAt: sponsoredAccounts.createdAt })
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
      const [acct] = await tx.select().from(sponsoredAccounts).where(eq(sponsoredAccounts.accountId, accountId)).for('update');
      if (!acct) return false;
      const [next] = await rowsOf<{ n: string | number }>(tx, sql`SELECT coalesce(max(${sponsoredOwners.seq}), 0) + 1 AS n FROM ${sponsoredOwners} WHERE ${sponsoredOwners.accountId} = ${accountId}`);
      await tx.insert(sponsoredOwners).values({ accountId, ownerId, seq: Number(next?.n ?? 1) }).onConflictDoNothing();
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
    await this.db.insert(links).values({ ...link, assetIds: JSON.stringify(link.assetIds) });
  }
  async findLink(id: string): Promise<LinkRecord | null> {
    const [r] = await this.db.select().from(links).where(eq(links.id, id));
    return r ? toLink(r) : null;
  }
  async listLinks(ownerId: string): Promise<LinkRecord[]> {
    return (await this.db.select().from(links).where(eq(links.ownerId, ownerId)).orderBy(asc(links.createdAt), asc(links.id))).map(toLink);
  }
  async revokeLink(ownerId: string, id: string, now: number): Promise<boolean> {
    const r = await this.db
      .update(links)
      .set({ revokedAt: now })
      .where(and(eq(links.id, id), eq(links.ownerId, ownerId), isNull(links.revokedAt)))
      .returning({ id: links.id });
    return r.length === 1;
  }
  async reserveDrop(linkId: string, size: number, now: number): Promise<DropReservation> {
    return this.db.transaction(async (tx): Promise<DropReservation> => {
      const [r] = await tx.select().from(links).where(eq(links.id, linkId)).for('update');
      const outcome = decideDropReservation(r ? toLink(r) : null, size, now);
      if (outcome === 'reserved') await tx.update(links).set({ acceptedBytes: sql`${links.acceptedBytes} + ${size}` }).where(eq(links.id, linkId));
      return outcome;
    });
  }
  async releaseDrop(linkId: string, size: number): Promise<void> {
    await this.db.update(links).set({ acceptedBytes: sql`greatest(0, ${links.acceptedBytes} - ${size})` }).where(eq(links.id, linkId));
  }
  async recordDrop(drop: DropRecord): Promise<void> {
    await this.db.insert(linkDrops).values(drop);
  }
  async findDrop(uploadId: string): Promise<DropRecord | null> {
    const [r] = await this.db.select().from(linkDrops).where(eq(linkDrops.uploadId, uploadId));
    return r ?? null;
  }
  async listDrops(linkId: string): Promise<DropRecord[]> {
    return this.db.select().from(linkDrops).where(eq(linkDrops.linkId, linkId)).orderBy(asc(linkDrops.createdAt), asc(linkDrops.uploadId));
  }
}

/**
 * Federated cache fills over PostgreSQL. `openIntake` holds a transaction-scoped advisory lock on
 * the (receiver, peer) pair while it sums the open intakes and decides with core's `decideIntake`.
 */
export class PgFederatedIntakes implements FederatedIntakeStore {
  constructor(readonly db: PgDb) {}

  async openIntake(intake: FederatedIntakeRecord, room: number | null, now: number): Promise<IntakeOutcome> {
    return this.db.transaction(async (tx): Promise<IntakeOutcome> => {
      const open = intake.state === 'Pending' || intake.state === 'Uploading' || intake.state === 'WaitingForProcessing';
      if (open) {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`svc-federated-intake\n${intake.receiverId}\n${intake.peer}`}, 0))`);
        const [row] = await tx
          .select({ n: sql<string | number>`coalesce(sum(${federatedIntakes.declaredSize}), 0)` })
          .from(federatedIntakes)
          .where(and(eq(federatedIntakes.receiverId, intake.receiverId), eq(federatedIntakes.peer, intake.peer), sql`${federatedIntakes.state} IN ${OPEN}`, sql`${federatedIntakes.expiresAt} > ${now}`));
        if (decideIntake(Number(row?.n ?? 0), intake.declaredSize, room) === 'over_budget') return 'over_budget';
      }
      await tx.insert(federatedIntakes).values(intake);
      return 'reserved';
    });
  }
  async findIntake(id: string): Promise<FederatedIntakeRecord | null> {
    const [r] = await this.db.select().from(federatedIntakes).where(eq(federatedIntakes.id, id));
    return r ?? null;
  }
  async markReceived(id: string, size: number, now: number): Promise<boolean> {
    const r = await this.db
      .update(federatedIntakes)
      .set({ state: 'WaitingForProcessing', receivedSize: size })
      .where(and(eq(federatedIntakes.id, id), sql`${federatedIntakes.state} IN ${OPEN}`, sql`${federatedIntakes.expiresAt} > ${now}`))
      .returning({ id: federatedIntakes.id });
    return r.length === 1;
  }
  async closeIntake(id: string, state: 'Completed' | 'Merged' | 'Cancelled'): Promise<boolean> {
    const r = await this.db
      .update(federatedIntakes)
      .set({ state })
      .where(and(eq(federatedIntakes.id, id), sql`${federatedIntakes.state} IN ${OPEN}`))
      .returning({ id: federatedIntakes.id });
    return r.length === 1;
  }
  async expireIntakes(now: number): Promise<string[]> {
    const r = await this.db
      .update(federatedIntakes)
      .set({ state: 'Expired' })
      .where(and(sql`${federatedIntakes.state} IN ${OPEN}`, sql`${federatedIntakes.expiresAt} <= ${now}`))
      .returning({ id: federatedIntakes.id });
    return r.map((x) => x.id);
  }
}
