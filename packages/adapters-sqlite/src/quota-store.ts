import type Database from 'better-sqlite3';
import { eq } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type {
  AssetBlob,
  AssetCatalog,
  AssetRecord,
  BlobRecord,
  CompleteOutcome,
  CompleteUpload,
  FederatedCacheOutcome,
  MetadataReplace,
  OpenUploadOutcome,
  QuotaAccountRecord,
  QuotaLedger,
  QuotaLimits,
  SweepResult,
  SweptBlob,
  UploadSessionRecord,
  UploadSessions,
} from '@strongroom/core';
import * as schema from './schema/index.js';
import { assets, blobs, quotaAccounts, uploadSessions } from './schema/index.js';

type Db = BetterSQLite3Database<typeof schema>;
type AccountRow = typeof quotaAccounts.$inferSelect;
type AssetRow = typeof assets.$inferSelect;

const OPEN = `('Pending', 'Uploading', 'WaitingForProcessing')`;

const toAccount = (accountId: string, r: AccountRow | undefined): QuotaAccountRecord =>
  r
    ? {
        accountId,
        charged: r.charged,
        reserved: r.reserved,
        limits: r.customLimits ? { soft: r.softLimit, hard: r.hardLimit } : null,
        hardSince: r.hardSince,
        suspendedAt: r.suspendedAt,
        sponsorId: r.sponsorId,
      }
    : { accountId, charged: 0, reserved: 0, limits: null, hardSince: null, suspendedAt: null, sponsorId: null };

/**
 * The quota ledger, upload sessions and asset references over SQLite. Counters (charged,
 * reserved) live on the account row and move in the same transaction as the rows they summarise;
 * transactions that check a limit run BEGIN IMMEDIATE, so concurrent processes serialise on the
 * write lock and many concurrent creations can never pass the hard limit together.
 */
export class SqliteQuotaStore implements QuotaLedger, UploadSessions, AssetCatalog {
  readonly db: Db;
  readonly #s;

  constructor(readonly sqlite: Database.Database) {
    this.db = drizzle(sqlite, { schema });
    const p = (text: string) => sqlite.prepare(text);
    this.#s = {
      account: p('SELECT * FROM quota_accounts WHERE account_id = ?'),
      ensure: p('INSERT INTO quota_accounts (account_id) VALUES (?) ON CONFLICT DO NOTHING'),
      expirePayer: p(`UPDATE upload_sessions SET state = 'Expired' WHERE payer_id = ? AND state IN ${OPEN} AND expires_at <= ? RETURNING declared_size`),
      expireAll: p(`UPDATE upload_sessions SET state = 'Expired' WHERE state IN ${OPEN} AND expires_at <= ? RETURNING id, payer_id, declared_size`),
      addReserved: p('UPDATE quota_accounts SET reserved = reserved + ? WHERE account_id = ?'),
      addCharged: p('UPDATE quota_accounts SET charged = charged + ? WHERE account_id = ?'),
      blob: p('SELECT content_hash, size, charged_to, peer, stored_at FROM blobs WHERE content_hash = ?'),
      insertBlob: p('INSERT INTO blobs (content_hash, size, charged_to, peer, stored_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING'),
      insertUpload: p(
        `INSERT INTO upload_sessions (id, uploader_id, payer_id, kind, declared_size, content_hash, album_id, intent_id, drop_link_id, state,
         received_size, received_hash, asset_id, created_at, expires_at) VALUES
         (@id, @uploaderId, @payerId, @kind, @declaredSize, @contentHash, @albumId, @intentId, @dropLinkId, @state,
         @receivedSize, @receivedHash, @assetId, @createdAt, @expiresAt)`,
      ),
      upload: p('SELECT * FROM upload_sessions WHERE id = ?'),
      setUploadState: p(`UPDATE upload_sessions SET state = @state, received_size = @size, received_hash = @hash WHERE id = @id AND state IN ${OPEN} AND expires_at > @now`),
      finishUpload: p('UPDATE upload_sessions SET state = ?, asset_id = ? WHERE id = ?'),
      cancelUpload: p(`UPDATE upload_sessions SET state = 'Cancelled' WHERE id = ? AND state IN ${OPEN} AND expires_at > ? RETURNING payer_id, declared_size`),
      inFlight: p(`SELECT count(*) AS n FROM upload_sessions WHERE album_id = ? AND state IN ${OPEN} AND expires_at > ?`),
      asset: p('SELECT * FROM assets WHERE id = ?'),
      assetBlobs: p('SELECT kind, content_hash, size FROM asset_blobs WHERE asset_id = ? ORDER BY seq'),
      insertAsset: p('INSERT INTO assets (id, owner_id, uploader_id, state, created_at, trashed_at, drop_expires_at) VALUES (?, ?, ?, ?, ?, NULL, ?)'),
      insertRef: p('INSERT INTO asset_blobs (asset_id, kind, content_hash, size) VALUES (?, ?, ?, ?)'),
      fedRef: p('SELECT 1 FROM federated_refs WHERE receiver = ? AND peer = ? AND content_hash = ?'),
      fedInsert: p('INSERT INTO federated_refs (receiver, peer, content_hash) VALUES (?, ?, ?)'),
      fedSpent: p('SELECT coalesce(sum(size), 0) AS n FROM blobs WHERE charged_to = ? AND peer = ?'),
      sweepBlobs: p(
        `DELETE FROM blobs WHERE NOT EXISTS (SELECT 1 FROM asset_blobs r WHERE r.content_hash = blobs.content_hash)
         AND NOT EXISTS (SELECT 1 FROM federated_refs f WHERE f.content_hash = blobs.content_hash)
         RETURNING content_hash, size, charged_to`,
      ),
    };
  }

  #expire(payerId: string, now: number): void {
    const rows = this.#s.expirePayer.all(payerId, now) as { declared_size: number }[];
    if (rows.length > 0) this.#s.addReserved.run(-rows.reduce((n, r) => n + r.declared_size, 0), payerId);
  }

  #row(accountId: string): AccountRow | undefined {
    const r = this.#s.account.get(accountId) as Record<string, unknown> | undefined;
    if (!r) return undefined;
    return {
      accountId: r.account_id as string,
      charged: r.charged as number,
      reserved: r.reserved as number,
      customLimits: r.custom_limits as number,
      softLimit: r.soft_limit as number | null,
      hardLimit: r.hard_limit as number | null,
      hardSince: r.hard_since as number | null,
      suspendedAt: r.suspended_at as number | null,
      sponsorId: r.sponsor_id as string | null,
    };
  }

  #storeBlob(contentHash: string, size: number, chargedTo: string, peer: string | null, now: number): boolean {
    if (this.#s.insertBlob.run(contentHash, size, chargedTo, peer, now).changes !== 1) return false;
    this.#s.ensure.run(chargedTo);
    this.#s.addCharged.run(size, chargedTo);
    return true;
  }

  #blob(contentHash: string): BlobRecord | null {
    const r = this.#s.blob.get(contentHash) as { content_hash: string; size: number; charged_to: string; peer: string | null; stored_at: number } | undefined;
    return r ? { contentHash: r.content_hash, size: r.size, chargedTo: r.charged_to, peer: r.peer, storedAt: r.stored_at } : null;
  }

  // QuotaLedger

  async readLedger(accountId: string, now: number): Promise<QuotaAccountRecord> {
    return this.sqlite
      .transaction(() => {
        this.#expire(accountId, now);
        return toAccount(accountId, this.#row(accountId));
      })
      .immediate();
  }
  async settleHardSince(accountId: string, hard: number | null, now: number): Promise<number | null> {
    const r = this.sqlite
      .prepare(
        `UPDATE quota_accounts SET hard_since = CASE WHEN ? IS NOT NULL AND charged + reserved >= ? THEN coalesce(hard_since, ?) ELSE NULL END
         WHERE account_id = ? RETURNING hard_since`,
      )
      .get(hard, hard, now, accountId) as { hard_since: number | null } | undefined;
    return r?.hard_since ?? null;
  }
  async setLimits(accountId: string, limits: QuotaLimits | null): Promise<void> {
    const values = { customLimits: limits ? 1 : 0, softLimit: limits?.soft ?? null, hardLimit: limits?.hard ?? null };
    this.db.insert(quotaAccounts).values({ accountId, ...values }).onConflictDoUpdate({ target: quotaAccounts.accountId, set: values }).run();
  }
  async setSuspended(accountId: string, suspendedAt: number | null): Promise<void> {
    this.db.insert(quotaAccounts).values({ accountId, suspendedAt }).onConflictDoUpdate({ target: quotaAccounts.accountId, set: { suspendedAt } }).run();
  }
  async setSponsor(accountId: string, sponsorId: string | null): Promise<void> {
    this.db.insert(quotaAccounts).values({ accountId, sponsorId }).onConflictDoUpdate({ target: quotaAccounts.accountId, set: { sponsorId } }).run();
  }
  async findBlob(contentHash: string): Promise<BlobRecord | null> {
    return this.#blob(contentHash);
  }
  async listChargedBlobs(accountId: string): Promise<BlobRecord[]> {
    return this.db.select().from(blobs).where(eq(blobs.chargedTo, accountId)).orderBy(blobs.storedAt, blobs.contentHash).all();
  }
  async cacheFederated(input: { receiver: string; peer: string; contentHash: string; size: number; budget: number | null }, now: number): Promise<FederatedCacheOutcome> {
    return this.sqlite
      .transaction((): FederatedCacheOutcome => {
        if (this.#s.fedRef.get(input.receiver, input.peer, input.contentHash)) return 'merged';
        if (this.#blob(input.contentHash)) {
          this.#s.fedInsert.run(input.receiver, input.peer, input.contentHash);
          return 'merged';
        }
        if (input.budget !== null) {
          const spent = (this.#s.fedSpent.get(input.receiver, input.peer) as { n: number }).n;
          if (spent + input.size > input.budget) return 'over_budget';
        }
        this.#storeBlob(input.contentHash, input.size, input.receiver, input.peer, now);
        this.#s.fedInsert.run(input.receiver, input.peer, input.contentHash);
        return 'cached';
      })
      .immediate();
  }
  async evictFederated(receiver: string, peer: string, contentHash: string): Promise<boolean> {
    return this.sqlite.prepare('DELETE FROM federated_refs WHERE receiver = ? AND peer = ? AND content_hash = ?').run(receiver, peer, contentHash).changes === 1;
  }
  async sweep(now: number): Promise<SweepResult> {
    return this.sqlite
      .transaction((): SweepResult => {
        const expired = this.#s.expireAll.all(now) as { id: string; payer_id: string; declared_size: number }[];
        for (const e of expired) this.#s.addReserved.run(-e.declared_size, e.payer_id);
        this.sqlite.prepare(`DELETE FROM assets WHERE state = 'pending_drop' AND drop_expires_at <= ?`).run(now);
        const gone = this.#s.sweepBlobs.all() as { content_hash: string; size: number; charged_to: string }[];
        const swept: SweptBlob[] = gone.map((g) => ({ contentHash: g.content_hash, size: g.size, chargedTo: g.charged_to }));
        for (const b of swept) this.#s.addCharged.run(-b.size, b.chargedTo);
        return { swept, expiredUploads: expired.map((e) => e.id) };
      })
      .immediate();
  }

  // UploadSessions

  async openUpload(session: UploadSessionRecord, hard: number | null, now: number): Promise<OpenUploadOutcome> {
    return this.sqlite
      .transaction((): OpenUploadOutcome => {
        this.#expire(session.payerId, now);
        const payer = toAccount(session.payerId, this.#row(session.payerId));
        if (hard !== null && payer.charged + payer.reserved + session.declaredSize > hard) return 'exceeded';
        const merged = session.contentHash !== null && this.#blob(session.contentHash) !== null;
        this.#s.insertUpload.run({ ...session, state: merged ? 'Merged' : 'Pending' });
        if (merged) return 'merged';
        this.#s.ensure.run(session.payerId);
        this.#s.addReserved.run(session.declaredSize, session.payerId);
        return 'reserved';
      })
      .immediate();
  }
  async findUpload(id: string): Promise<UploadSessionRecord | null> {
    const r = this.db.select().from(uploadSessions).where(eq(uploadSessions.id, id)).get();
    return r ?? null;
  }
  async markUploading(id: string, now: number): Promise<boolean> {
    return this.#s.setUploadState.run({ id, state: 'Uploading', size: null, hash: null, now }).changes === 1;
  }
  async markReceived(id: string, received: { size: number; hash: string } | null, now: number): Promise<boolean> {
    const state = received ? 'WaitingForProcessing' : 'Pending';
    return this.#s.setUploadState.run({ id, state, size: received?.size ?? null, hash: received?.hash ?? null, now }).changes === 1;
  }
  async completeUpload(input: CompleteUpload, now: number): Promise<CompleteOutcome> {
    return this.sqlite
      .transaction((): CompleteOutcome => {
        const s = this.db.select().from(uploadSessions).where(eq(uploadSessions.id, input.uploadId)).get();
        if (!s) return 'not_open';
        const binding = s.state === 'Merged' && s.assetId === null;
        const open = (s.state === 'Pending' || s.state === 'Uploading' || s.state === 'WaitingForProcessing') && now < s.expiresAt;
        if (!binding && !open) return 'not_open';
        if ('attachTo' in input.asset) {
          const target = this.#s.asset.get(input.asset.attachTo) as { state: string } | undefined;
          if (!target || target.state === 'pending_drop') return 'asset_missing';
        }
        if (binding && this.#blob(input.contentHash) === null) return 'blob_missing';
        let outcome: CompleteOutcome = 'merged';
        if (!binding) {
          this.#s.addReserved.run(-s.declaredSize, s.payerId);
          if (this.#storeBlob(input.contentHash, input.size, s.payerId, null, now)) outcome = 'completed';
        }
        const size = this.#blob(input.contentHash)!.size;
        let assetId: string;
        if ('attachTo' in input.asset) {
          assetId = input.asset.attachTo;
        } else {
          const c = input.asset.create;
          assetId = c.id;
          this.#s.insertAsset.run(c.id, c.ownerId, s.uploaderId, c.dropExpiresAt === null ? 'live' : 'pending_drop', now, c.dropExpiresAt);
        }
        this.#s.insertRef.run(assetId, s.kind, input.contentHash, size);
        this.#s.finishUpload.run(outcome === 'completed' ? 'Completed' : 'Merged', assetId, s.id);
        return outcome;
      })
      .immediate();
  }
  async cancelUpload(id: string, now: number): Promise<boolean> {
    return this.sqlite.transaction((): boolean => {
      const r = this.#s.cancelUpload.get(id, now) as { payer_id: string; declared_size: number } | undefined;
      if (!r) return false;
      this.#s.addReserved.run(-r.declared_size, r.payer_id);
      return true;
    })();
  }
  async countInFlightUploads(albumId: string, now: number): Promise<number> {
    return (this.#s.inFlight.get(albumId, now) as { n: number }).n;
  }

  // AssetCatalog

  async findAsset(id: string): Promise<AssetRecord | null> {
    const r = this.db.select().from(assets).where(eq(assets.id, id)).get();
    return r ? this.#toAsset(r) : null;
  }
  #toAsset(r: AssetRow): AssetRecord {
    const refs = this.#s.assetBlobs.all(r.id) as { kind: AssetBlob['kind']; content_hash: string; size: number }[];
    return { ...r, blobs: refs.map((b) => ({ kind: b.kind, contentHash: b.content_hash, size: b.size })) };
  }
  async trashAsset(id: string, now: number): Promise<boolean> {
    return this.sqlite.prepare(`UPDATE assets SET state = 'trashed', trashed_at = ? WHERE id = ? AND state = 'live'`).run(now, id).changes === 1;
  }
  async restoreAsset(id: string): Promise<boolean> {
    return this.sqlite.prepare(`UPDATE assets SET state = 'live', trashed_at = NULL WHERE id = ? AND state = 'trashed'`).run(id).changes === 1;
  }
  async purgeAsset(id: string): Promise<boolean> {
    // asset_blobs rows go with the asset (ON DELETE CASCADE): the references drop, the bytes stay charged.
    return this.sqlite.prepare(`DELETE FROM assets WHERE id = ? AND state IN ('trashed', 'pending_drop')`).run(id).changes === 1;
  }
  async emptyTrash(ownerId: string): Promise<number> {
    return this.sqlite.prepare(`DELETE FROM assets WHERE owner_id = ? AND state = 'trashed'`).run(ownerId).changes;
  }
  async adoptDrop(id: string, now: number): Promise<boolean> {
    return (
      this.sqlite.prepare(`UPDATE assets SET state = 'live', drop_expires_at = NULL WHERE id = ? AND state = 'pending_drop' AND drop_expires_at > ?`).run(id, now).changes === 1
    );
  }
  async replaceMetadata(input: MetadataReplace, now: number): Promise<'replaced' | 'not_live'> {
    return this.sqlite
      .transaction((): 'replaced' | 'not_live' => {
        const a = this.#s.asset.get(input.assetId) as { state: string } | undefined;
        if (!a || a.state !== 'live') return 'not_live';
        this.#storeBlob(input.contentHash, input.size, input.payerId, null, now);
        this.sqlite.prepare(`DELETE FROM asset_blobs WHERE asset_id = ? AND kind = 'metadata'`).run(input.assetId);
        this.#s.insertRef.run(input.assetId, 'metadata', input.contentHash, this.#blob(input.contentHash)!.size);
        return 'replaced';
      })
      .immediate();
  }
}
