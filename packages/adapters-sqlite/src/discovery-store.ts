import type Database from 'better-sqlite3';
import { and, asc, eq, isNull } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  CAPABILITY_PURGEABLE,
  CAPABILITY_REVOCABLE,
  REVOCATION_LISTED,
  takeToken,
  type BucketDecision,
  type CapabilityRevocationStore,
  type ClaimOutcome,
  type HandleRecord,
  type HandleStore,
  type MintedCapability,
  type PeerRateStore,
  type RevokedCapability,
} from '@strongroom/core';
import { filterWhere } from '@strongroom/sql-common';
import { handles, mintedCapabilities, peerBuckets } from './schema/discovery.js';

const schema = { handles, peerBuckets, mintedCapabilities };

/**
 * Handles, per-peer buckets and minted-capability revocations over SQLite. The bucket is read,
 * decided by core's `takeToken` and written in one IMMEDIATE transaction: SQLite takes the write
 * lock first, so processes sharing the file draw from it one at a time.
 */
export class SqliteDiscoveryStore implements HandleStore, PeerRateStore, CapabilityRevocationStore {
  readonly db: BetterSQLite3Database<typeof schema>;

  constructor(readonly sqlite: Database.Database) {
    this.db = drizzle(sqlite, { schema });
  }

  async claimHandle(claim: { accountId: string; user: string; at: number }): Promise<ClaimOutcome> {
    const inserted = this.db
      .insert(handles)
      .values({ accountId: claim.accountId, user: claim.user, published: false, claimedAt: claim.at })
      .onConflictDoNothing()
      .run();
    if (inserted.changes === 1) return 'claimed';
    const mine = this.db.select().from(handles).where(eq(handles.accountId, claim.accountId)).get();
    if (mine) return mine.user === claim.user ? 'claimed' : 'fixed';
    return 'taken';
  }

  async findHandleByAccount(accountId: string): Promise<HandleRecord | null> {
    return this.db.select().from(handles).where(eq(handles.accountId, accountId)).get() ?? null;
  }

  async findHandleByUser(user: string): Promise<HandleRecord | null> {
    return this.db.select().from(handles).where(eq(handles.user, user)).get() ?? null;
  }

  async setHandlePublished(accountId: string, published: boolean): Promise<boolean> {
    return this.db.update(handles).set({ published }).where(eq(handles.accountId, accountId)).run().changes === 1;
  }

  async takePeerToken(peer: string, now: number, rate: number): Promise<BucketDecision> {
    return this.db.transaction(
      (tx) => {
        const row = tx.select().from(peerBuckets).where(eq(peerBuckets.peer, peer)).get();
        const decision = takeToken(row ? { level: row.level, updatedAt: row.updatedAt } : null, now, rate);
        tx.insert(peerBuckets)
          .values({ peer, ...decision.bucket })
          .onConflictDoUpdate({ target: peerBuckets.peer, set: decision.bucket })
          .run();
        return decision;
      },
      { behavior: 'immediate' },
    );
  }

  async recordMintedCapability(token: MintedCapability): Promise<void> {
    this.db.insert(mintedCapabilities).values(token).run();
  }

  async revokeCapability(jti: string, at: number): Promise<boolean> {
    return (
      this.db
        .update(mintedCapabilities)
        .set({ revokedAt: at })
        .where(and(eq(mintedCapabilities.jti, jti), isNull(mintedCapabilities.revokedAt)))
        .run().changes === 1
    );
  }

  async revokeCapabilitiesFor(peer: string, at: number): Promise<number> {
    return this.db
      .update(mintedCapabilities)
      .set({ revokedAt: at })
      .where(
        and(
          eq(mintedCapabilities.peer, peer),
          filterWhere(CAPABILITY_REVOCABLE, { at }, (f) => mintedCapabilities[f]),
        ),
      )
      .run().changes;
  }

  async purgeMintedCapabilities(before: number): Promise<number> {
    return this.db
      .delete(mintedCapabilities)
      .where(filterWhere(CAPABILITY_PURGEABLE, { before }, (f) => mintedCapabilities[f]))
      .run().changes;
  }

  async listRevokedCapabilities(since: number): Promise<RevokedCapability[]> {
    const rows = this.db
      .select({
        jti: mintedCapabilities.jti,
        revokedAt: mintedCapabilities.revokedAt,
        expiresAt: mintedCapabilities.expiresAt,
      })
      .from(mintedCapabilities)
      .where(filterWhere(REVOCATION_LISTED, { since }, (f) => mintedCapabilities[f]))
      .orderBy(asc(mintedCapabilities.revokedAt), asc(mintedCapabilities.jti))
      .all();
    return rows.map((r) => ({ jti: r.jti, revokedAt: r.revokedAt!, expiresAt: r.expiresAt }));
  }
}
