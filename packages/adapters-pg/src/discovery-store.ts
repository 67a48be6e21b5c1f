import { and, asc, eq, isNull } from 'drizzle-orm';
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
import { fullBucket } from '@strongroom/core/internal';
import type { PgDb } from './db.js';
import { handles, mintedCapabilities, peerBuckets } from './schema/discovery.js';

/**
 * Handles, per-peer buckets and minted-capability revocations over PostgreSQL, mirroring
 * SqliteDiscoveryStore. A draw from a bucket makes sure the peer's row exists, locks it with
 * SELECT ... FOR UPDATE, decides with core's `takeToken` and writes, in one transaction: draws
 * from any number of processes queue on the row lock and each sees the previous one's result.
 */
export class PgDiscoveryStore implements HandleStore, PeerRateStore, CapabilityRevocationStore {
  constructor(readonly db: PgDb) {}

  async claimHandle(claim: { accountId: string; user: string; at: number }): Promise<ClaimOutcome> {
    const inserted = await this.db
      .insert(handles)
      .values({ accountId: claim.accountId, user: claim.user, published: false, claimedAt: claim.at })
      .onConflictDoNothing()
      .returning({ id: handles.accountId });
    if (inserted.length === 1) return 'claimed';
    const [mine] = await this.db.select().from(handles).where(eq(handles.accountId, claim.accountId));
    if (mine) return mine.user === claim.user ? 'claimed' : 'fixed';
    return 'taken';
  }

  async findHandleByAccount(accountId: string): Promise<HandleRecord | null> {
    const [r] = await this.db.select().from(handles).where(eq(handles.accountId, accountId));
    return r ?? null;
  }

  async findHandleByUser(user: string): Promise<HandleRecord | null> {
    const [r] = await this.db.select().from(handles).where(eq(handles.user, user));
    return r ?? null;
  }

  async setHandlePublished(accountId: string, published: boolean): Promise<boolean> {
    const r = await this.db
      .update(handles)
      .set({ published })
      .where(eq(handles.accountId, accountId))
      .returning({ id: handles.accountId });
    return r.length === 1;
  }

  async takePeerToken(peer: string, now: number, rate: number): Promise<BucketDecision> {
    return this.db.transaction(async (tx) => {
      // A missing row is a full bucket; inserting it first gives every drawer a row to lock.
      await tx
        .insert(peerBuckets)
        .values({ peer, ...fullBucket(rate, now) })
        .onConflictDoNothing();
      const [row] = await tx.select().from(peerBuckets).where(eq(peerBuckets.peer, peer)).for('update');
      const decision = takeToken(row ? { level: row.level, updatedAt: row.updatedAt } : null, now, rate);
      await tx.update(peerBuckets).set(decision.bucket).where(eq(peerBuckets.peer, peer));
      return decision;
    });
  }

  async recordMintedCapability(token: MintedCapability): Promise<void> {
    await this.db.insert(mintedCapabilities).values(token);
  }

  async revokeCapability(jti: string, at: number): Promise<boolean> {
    const r = await this.db
      .update(mintedCapabilities)
      .set({ revokedAt: at })
      .where(and(eq(mintedCapabilities.jti, jti), isNull(mintedCapabilities.revokedAt)))
      .returning({ jti: mintedCapabilities.jti });
    return r.length === 1;
  }

  async revokeCapabilitiesFor(peer: string, at: number): Promise<number> {
    const r = await this.db
      .update(mintedCapabilities)
      .set({ revokedAt: at })
      .where(
        and(
          eq(mintedCapabilities.peer, peer),
          filterWhere(CAPABILITY_REVOCABLE, { at }, (f) => mintedCapabilities[f]),
        ),
      )
      .returning({ jti: mintedCapabilities.jti });
    return r.length;
  }

  async purgeMintedCapabilities(before: number): Promise<number> {
    const r = await this.db
      .delete(mintedCapabilities)
      .where(filterWhere(CAPABILITY_PURGEABLE, { before }, (f) => mintedCapabilities[f]))
      .returning({ jti: mintedCapabilities.jti });
    return r.length;
  }

  async listRevokedCapabilities(since: number): Promise<RevokedCapability[]> {
    const rows = await this.db
      .select({
        jti: mintedCapabilities.jti,
        revokedAt: mintedCapabilities.revokedAt,
        expiresAt: mintedCapabilities.expiresAt,
      })
      .from(mintedCapabilities)
      .where(filterWhere(REVOCATION_LISTED, { since }, (f) => mintedCapabilities[f]))
      .orderBy(asc(mintedCapabilities.revokedAt), asc(mintedCapabilities.jti));
    return rows.map((r) => ({ jti: r.jti, revokedAt: r.revokedAt!, expiresAt: r.expiresAt }));
  }
}
