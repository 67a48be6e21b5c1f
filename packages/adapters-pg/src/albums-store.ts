import { eq } from 'drizzle-orm';
import {
  albumCreated,
  decideAbort,
  decideProposal,
  type AlbumRecord,
  type AlbumStore,
  type ProposeOutcome,
  type UpgradeIntentRecord,
} from '@strongroom/core';
import { albumFromRow, intentFromRow } from '@strongroom/sql-common';
import type { PgDb } from './db.js';
import { appendSyncChanges } from './sync-store.js';
import { albumUpgradeIntents, albums } from './schema/devices-albums.js';

/**
 * Albums and the server side of the upgrade ceremony over PostgreSQL, mirroring SqliteAlbumStore.
 * `proposeIntent` and `abortIntent` take the album row with SELECT ... FOR UPDATE before reading
 * anything they decide on: proposals for one album queue on that lock, each decides (with core's
 * pure `decideProposal`) on the state the previous one committed, so at most one intent is live.
 */
export class PgAlbumStore implements AlbumStore {
  constructor(readonly db: PgDb) {}

  async createAlbum(a: AlbumRecord): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.insert(albums).values({
        id: a.id,
        accountId: a.accountId,
        protocolVersion: a.protocolVersion,
        createdAt: a.createdAt,
        upgradePendingTo: a.upgrade?.toVersion ?? null,
        intentId: a.upgrade?.intentId ?? null,
        upgradeReceivedAt: a.upgrade?.receivedAt ?? null,
        upgradeExpiresAt: a.upgrade?.expiresAt ?? null,
      });
      await appendSyncChanges(tx, a.accountId, albumCreated(a.id), a.createdAt);
    });
  }

  async findAlbum(albumId: string): Promise<AlbumRecord | null> {
    const [r] = await this.db.select().from(albums).where(eq(albums.id, albumId));
    return r ? albumFromRow(r) : null;
  }

  async proposeIntent(intent: UpgradeIntentRecord, now: number): Promise<ProposeOutcome> {
    return this.db.transaction(async (tx) => {
      const [album] = await tx.select().from(albums).where(eq(albums.id, intent.albumId)).for('update');
      const [known] = await tx
        .select()
        .from(albumUpgradeIntents)
        .where(eq(albumUpgradeIntents.intentId, intent.intentId));
      const outcome = decideProposal(
        album ? albumFromRow(album) : null,
        known ? intentFromRow(known) : null,
        intent,
        now,
      );
      if (outcome.kind === 'accepted') {
        await tx.insert(albumUpgradeIntents).values({ ...intent, intentCbor: Buffer.from(intent.intentCbor) });
        await tx
          .update(albums)
          .set({
            upgradePendingTo: intent.toVersion,
            intentId: intent.intentId,
            upgradeReceivedAt: intent.receivedAt,
            upgradeExpiresAt: intent.expiresAt,
          })
          .where(eq(albums.id, intent.albumId));
      }
      return outcome;
    });
  }

  async abortIntent(albumId: string, intentId: string, now: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [r] = await tx.select().from(albums).where(eq(albums.id, albumId)).for('update');
      if (!r || !decideAbort(albumFromRow(r), intentId, now)) return false;
      await tx
        .update(albums)
        .set({ upgradePendingTo: null, intentId: null, upgradeReceivedAt: null, upgradeExpiresAt: null })
        .where(eq(albums.id, albumId));
      return true;
    });
  }

  async findIntent(intentId: string): Promise<UpgradeIntentRecord | null> {
    const [r] = await this.db.select().from(albumUpgradeIntents).where(eq(albumUpgradeIntents.intentId, intentId));
    return r ? intentFromRow(r) : null;
  }
}
