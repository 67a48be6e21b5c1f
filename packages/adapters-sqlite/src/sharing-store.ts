import type Database from 'better-sqlite3';
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
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
import * as schema from './schema/index.js';
import { federatedIntakes, linkDrops, links, sponsoredAccounts, sponsoredOwners } from './schema/index.js';

type Db = BetterSQLite3Database<typeof schema>;
type LinkRow = typeof links.$inferSelect;

const OPEN = sql`('Pending', 'Uploading', 'WaitingForProcessing')`;

const toLink = (r: LinkRow): LinkRecord => ({ ...r, assetIds: JSON.parse(r.assetIds) as string[] });

/** Sponsored accounts and their owners over SQLite. */
export class SqliteSponsorshipStore implements SponsorshipStore {
  readonly db: Db;
  constructor(readonly sqlite: Database.Database) {
    this.db = drizzle(sqlite, { schema });
  }

  #owners(accountId: string): string[] {
    return this.db.select({ o: sponsoredOwners.ownerId }).from(sponsoredOwners).where(eq(sponsoredOwners.accountId, accountId)).orderBy(asc(sponsoredOwners.seq)).all().map((r) => r.o);
  }

  async createSponsored(r: { accountId: string; sponsorId: string; createdAt: number }): Promise<void> {
    this.sqlite.transaction(() => {
      this.db.insert(sponsoredAccounts).values(r).run();
      this.db.insert(sponsoredOwners).values({ accountId: r.accountId, ownerId: r.sponsorId, seq: 0 }).run();
    })();
  }
  async findSponsored(accountId: string): Promise<SponsoredRecord | null> {
    const r = this.db.select().from(sponsoredAccounts).where(eq(sponsoredAccounts.accountId, accountId)).get();
    return r ? { ...r, owners: this.#owners(accountId) } : null;
  }
  async listOwnedBy(ownerId: string): Promise<SponsoredRecord[]> {
    const rows = this.db
      .select({ accountId: sponsoredAccounts.accountId, sponsorId: sponsoredAccounts.sponsorId, createdAt: sponsoredAccounts.createdAt })
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
        if (!this.db.select().from(sponsoredAccounts).where(eq(sponsoredAccounts.accountId, accountId)).get()) return false;
        const next = this.sqlite.prepare('SELECT coalesce(max(seq), 0) + 1 AS n FROM sponsored_owners WHERE account_id = ?').get(accountId) as { n: number };
        this.db.insert(sponsoredOwners).values({ accountId, ownerId, seq: next.n }).onConflictDoNothing().run();
        return true;
      })
      .immediate();
  }
  async removeOwner(accountId: string, ownerId: string): Promise<boolean> {
    return this.db.delete(sponsoredOwners).where(and(eq(sponsoredOwners.accountId, accountId), eq(sponsoredOwners.ownerId, ownerId))).run().changes === 1;
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
    this.db.insert(links).values({ ...link, assetIds: JSON.stringify(link.assetIds) }).run();
  }
  async findLink(id: string): Promise<LinkRecord | null> {
    const r = this.db.select().from(links).where(eq(links.id, id)).get();
    return r ? toLink(r) : null;
  }
  async listLinks(ownerId: string): Promise<LinkRecord[]> {
    return this.db.select().from(links).where(eq(links.ownerId, ownerId)).orderBy(asc(links.createdAt), asc(links.id)).all().map(toLink);
  }
  async revokeLink(ownerId: string, id: string, now: number): Promise<boolean> {
    return this.db.update(links).set({ revokedAt: now }).where(and(eq(links.id, id), eq(links.ownerId, ownerId), isNull(links.revokedAt))).run().changes === 1;
  }
  async reserveDrop(linkId: string, size: number, now: number): Promise<DropReservation> {
    return this.sqlite
      .transaction((): DropReservation => {
        const r = this.db.select().from(links).where(eq(links.id, linkId)).get();
        const outcome = decideDropReservation(r ? toLink(r) : null, size, now);
        if (outcome === 'reserved') this.db.update(links).set({ acceptedBytes: sql`${links.acceptedBytes} + ${size}` }).where(eq(links.id, linkId)).run();
        return outcome;
      })
      .immediate();
  }
  async releaseDrop(linkId: string, size: number): Promise<void> {
    this.db.update(links).set({ acceptedBytes: sql`max(0, ${links.acceptedBytes} - ${size})` }).where(eq(links.id, linkId)).run();
  }
  async recordDrop(drop: DropRecord): Promise<void> {
    this.db.insert(linkDrops).values(drop).run();
  }
  async findDrop(uploadId: string): Promise<DropRecord | null> {
    return this.db.select().from(linkDrops).where(eq(linkDrops.uploadId, uploadId)).get() ?? null;
  }
  async listDrops(linkId: string): Promise<DropRecord[]> {
    return this.db.select().from(linkDrops).where(eq(linkDrops.linkId, linkId)).orderBy(asc(linkDrops.createdAt), asc(linkDrops.uploadId)).all();
  }
}

/** Federated cache fills over SQLite; `openIntake` decides with core's `decideIntake` under BEGIN IMMEDIATE. */
export class SqliteFederatedIntakes implements FederatedIntakeStore {
  readonly db: Db;
  constructor(readonly sqlite: Database.Database) {
    this.db = drizzle(sqlite, { schema });
  }

  async openIntake(intake: FederatedIntakeRecord, room: number | null, now: number): Promise<IntakeOutcome> {
    return this.sqlite
      .transaction((): IntakeOutcome => {
        const open = intake.state === 'Pending' || intake.state === 'Uploading' || intake.state === 'WaitingForProcessing';
        if (open) {
          const [row] = this.db
            .select({ n: sql<number>`coalesce(sum(${federatedIntakes.declaredSize}), 0)` })
            .from(federatedIntakes)
            .where(and(eq(federatedIntakes.receiverId, intake.receiverId), eq(federatedIntakes.peer, intake.peer), sql`${federatedIntakes.state} IN ${OPEN}`, sql`${federatedIntakes.expiresAt} > ${now}`))
            .all();
          if (decideIntake(Number(row?.n ?? 0), intake.declaredSize, room) === 'over_budget') return 'over_budget';
        }
        this.db.insert(federatedIntakes).values(intake).run();
        return 'reserved';
      })
      .immediate();
  }
  async findIntake(id: string): Promise<FederatedIntakeRecord | null> {
    return this.db.select().from(federatedIntakes).where(eq(federatedIntakes.id, id)).get() ?? null;
  }
  async markReceived(id: string, size: number, now: number): Promise<boolean> {
    return (
      this.db
        .update(federatedIntakes)
        .set({ state: 'WaitingForProcessing', receivedSize: size })
        .where(and(eq(federatedIntakes.id, id), sql`${federatedIntakes.state} IN ${OPEN}`, sql`${federatedIntakes.expiresAt} > ${now}`))
        .run().changes === 1
    );
  }
  async closeIntake(id: string, state: 'Completed' | 'Merged' | 'Cancelled'): Promise<boolean> {
    return this.db.update(federatedIntakes).set({ state }).where(and(eq(federatedIntakes.id, id), sql`${federatedIntakes.state} IN ${OPEN}`)).run().changes === 1;
  }
  async expireIntakes(now: number): Promise<string[]> {
    return this.db
      .update(federatedIntakes)
      .set({ state: 'Expired' })
      .where(and(sql`${federatedIntakes.state} IN ${OPEN}`, sql`${federatedIntakes.expiresAt} <= ${now}`))
      .returning({ id: federatedIntakes.id })
      .all()
      .map((r) => r.id);
  }
}
