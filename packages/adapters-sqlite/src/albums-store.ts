import type Database from 'better-sqlite3';
import { eq } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
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
import { appendSyncChanges } from './sync-store.js';
import { albumUpgradeIntents, albums } from './schema/devices-albums.js';

/**
 * Albums and the server side of the upgrade ceremony over SQLite. `proposeIntent` reads, decides
 * with core's pure `decideProposal` and writes inside one synchronous transaction, so no two
 * intents can be live on one album.
 */
export class SqliteAlbumStore implements AlbumStore {
  readonly #db: BetterSQLite3Database;

  readonly #sqlite: Database.Database;

  constructor(sqlite: Database.Database) {
    this.#sqlite = sqlite;
    this.#db = drizzle(sqlite);
  }

  async createAlbum(a: AlbumRecord): Promise<void> {
    this.#sqlite
      .transaction(() => {
        this.#db
          .insert(albums)
          .values({
            id: a.id,
            accountId: a.accountId,
            protocolVersion: a.protocolVersion,
            createdAt: a.createdAt,
            upgradePendingTo: a.upgrade?.toVersion ?? null,
            intentId: a.upgrade?.intentId ?? null,
            upgradeReceivedAt: a.upgrade?.receivedAt ?? null,
            upgradeExpiresAt: a.upgrade?.expiresAt ?? null,
          })
          .run();
        appendSyncChanges(this.#sqlite, a.accountId, albumCreated(a.id), a.createdAt);
      })
      .immediate();
  }

  async findAlbum(albumId: string): Promise<AlbumRecord | null> {
    const r = this.#db.select().from(albums).where(eq(albums.id, albumId)).get();
    return r ? albumFromRow(r) : null;
  }

  async proposeIntent(intent: UpgradeIntentRecord, now: number): Promise<ProposeOutcome> {
    return this.#db.transaction(
      (tx) => {
        const album = tx.select().from(albums).where(eq(albums.id, intent.albumId)).get();
        const known = tx
          .select()
          .from(albumUpgradeIntents)
          .where(eq(albumUpgradeIntents.intentId, intent.intentId))
          .get();
        const outcome = decideProposal(
          album ? albumFromRow(album) : null,
          known ? intentFromRow(known) : null,
          intent,
          now,
        );
        if (outcome.kind === 'accepted') {
          tx.insert(albumUpgradeIntents)
            .values({ ...intent, intentCbor: Buffer.from(intent.intentCbor) })
            .run();
          tx.update(albums)
            .set({
              upgradePendingTo: intent.toVersion,
              intentId: intent.intentId,
              upgradeReceivedAt: intent.receivedAt,
              upgradeExpiresAt: intent.expiresAt,
            })
            .where(eq(albums.id, intent.albumId))
            .run();
        }
        return outcome;
      },
      { behavior: 'immediate' },
    );
  }

  async abortIntent(albumId: string, intentId: string, now: number): Promise<boolean> {
    return this.#db.transaction(
      (tx) => {
        const r = tx.select().from(albums).where(eq(albums.id, albumId)).get();
        if (!r || !decideAbort(albumFromRow(r), intentId, now)) return false;
        tx.update(albums)
          .set({ upgradePendingTo: null, intentId: null, upgradeReceivedAt: null, upgradeExpiresAt: null })
          .where(eq(albums.id, albumId))
          .run();
        return true;
      },
      { behavior: 'immediate' },
    );
  }

  async findIntent(intentId: string): Promise<UpgradeIntentRecord | null> {
    const r = this.#db.select().from(albumUpgradeIntents).where(eq(albumUpgradeIntents.intentId, intentId)).get();
    return r ? intentFromRow(r) : null;
  }
}
