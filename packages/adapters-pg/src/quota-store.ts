import { and, asc, eq, sql } from 'drizzle-orm';
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
import { rowsOf, type PgDb } from './db.js';
import { assetBlobs, assets, blobs, federatedRefs, quotaAccounts, uploadSessions } from './schema/quota.js';

type AccountRow = typeof quotaAccounts.$inferSelect;
type AssetRow = typeof assets.$inferSelect;

const OPEN = sql.raw(`('Pending', 'Uploading', 'WaitingForProcessing')`);

/**
 * Finalize, metadata replacement and federated caching take this lock shared; the sweep takes it
 * exclusive. Without it, the sweep's "no reference names this blob" could be judged while a
 * finalize is adding the first reference to that blob in a transaction not yet committed.
 */
const BLOB_INDEX_LOCK = 0x626c6f62; // 'blob'

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
 * The quota ledger, upload sessions and asset references over PostgreSQL, mirroring
 * SqliteQuotaStore. SQLite serialises writers on one lock; here each decision that checks a limit
 * holds the paying account's `quota_accounts` row (SELECT ... FOR UPDATE) from its read to its
 * commit, so creations for one account queue while other accounts proceed, and no two can pass
 * the hard limit together under READ COMMITTED.
 *
 * Lock order, to stay free of deadlocks: the payer's quota row, then upload session rows, then
 * asset rows. Counters only ever move by `col = col + delta` in the same transaction as the rows
 * they summarise.
 */
export class PgQuotaStore implements QuotaLedger, UploadSessions, AssetCatalog {
  constructor(readonly db: PgDb) {}

  /** Creates the account's quota row if needed and locks it until the transaction ends. */
  async #lockPayer(tx: PgDb, accountId: string): Promise<AccountRow> {
    await tx.insert(quotaAccounts).values({ accountId }).onConflictDoNothing();
    const [r] = await tx.select().from(quotaAccounts).where(eq(quotaAccounts.accountId, accountId)).for('update');
    return r!;
  }

  async #row(tx: PgDb, accountId: string): Promise<AccountRow | undefined> {
    const [r] = await tx.select().from(quotaAccounts).where(eq(quotaAccounts.accountId, accountId));
    return r;
  }

  /** Expires the payer's timed-out open sessions and releases their reservations (caller holds the payer row). */
  async #expire(tx: PgDb, payerId: string, now: number): Promise<string[]> {
    const rows = await tx
      .update(uploadSessions)
      .set({ state: 'Expired' })
      .where(and(eq(uploadSessions.payerId, payerId), sql`${uploadSessions.state} IN ${OPEN}`, sql`${uploadSessions.expiresAt} <= ${now}`))
      .returning({ id: uploadSessions.id, declaredSize: uploadSessions.declaredSize });
    const released = rows.reduce((n, r) => n + r.declaredSize, 0);
    if (released > 0) await this.#addReserved(tx, payerId, -released);
    return rows.map((r) => r.id);
  }

  async #addReserved(tx: PgDb, accountId: string, delta: number): Promise<void> {
    await tx.update(quotaAccounts).set({ reserved: sql`${quotaAccounts.reserved} + ${delta}` }).where(eq(quotaAccounts.accountId, accountId));
  }
  async #addCharged(tx: PgDb, accountId: string, delta: number): Promise<void> {
    await tx.update(quotaAccounts).set({ charged: sql`${quotaAccounts.charged} + ${delta}` }).where(eq(quotaAccounts.accountId, accountId));
  }

  /** Indexes a blob unless its hash is known (global dedup); charges `chargedTo` only when it is new. */
  async #storeBlob(tx: PgDb, contentHash: string, size: number, chargedTo: string, peer: string | null, now: number): Promise<boolean> {
    const inserted = await tx
      .insert(blobs)
      .values({ contentHash, size, chargedTo, peer, storedAt: now })
      .onConflictDoNothing()
      .returning({ h: blobs.contentHash });
    if (inserted.length !== 1) return false;
    await tx.insert(quotaAccounts).values({ accountId: chargedTo }).onConflictDoNothing();
    await this.#addCharged(tx, chargedTo, size);
    return true;
  }

  async #blob(tx: PgDb, contentHash: string): Promise<BlobRecord | null> {
    const [r] = await tx.select().from(blobs).where(eq(blobs.contentHash, contentHash));
    return r ?? null;
  }

  #blobLock(tx: PgDb, mode: 'shared' | 'exclusive') {
    return mode === 'shared'
      ? tx.execute(sql`SELECT pg_advisory_xact_lock_shared(${BLOB_INDEX_LOCK})`)
      : tx.execute(sql`SELECT pg_advisory_xact_lock(${BLOB_INDEX_LOCK})`);
  }

  // QuotaLedger

  async readLedger(accountId: string, now: number): Promise<QuotaAccountRecord> {
    // Read on every quota check (several times per upload creation): one statement and no lock
    // unless some open session of the account has timed out and must be expired first.
    const [r] = await this.db
      .select({
        row: quotaAccounts,
        due: sql<boolean>`EXISTS (SELECT 1 FROM ${uploadSessions} WHERE ${uploadSessions.payerId} = ${accountId}
          AND ${uploadSessions.state} IN ${OPEN} AND ${uploadSessions.expiresAt} <= ${now})`,
      })
      .from(quotaAccounts)
      .where(eq(quotaAccounts.accountId, accountId));
    // No row means nothing charged and nothing reserved: no session could have reserved without one.
    if (!r) return toAccount(accountId, undefined);
    if (!r.due) return toAccount(accountId, r.row);
    return this.db.transaction(async (tx) => {
      await this.#lockPayer(tx, accountId);
      await this.#expire(tx, accountId, now);
      return toAccount(accountId, await this.#row(tx, accountId));
    });
  }
  async settleHardSince(accountId: string, hard: number | null, now: number): Promise<number | null> {
    const [r] = await this.db
      .update(quotaAccounts)
      .set({
        hardSince: sql`CASE WHEN ${hard}::bigint IS NOT NULL AND ${quotaAccounts.charged} + ${quotaAccounts.reserved} >= ${hard}::bigint
          THEN coalesce(${quotaAccounts.hardSince}, ${now}::bigint) ELSE NULL END`,
      })
      .where(eq(quotaAccounts.accountId, accountId))
      .returning({ hardSince: quotaAccounts.hardSince });
    return r?.hardSince ?? null;
  }
  async setLimits(accountId: string, limits: QuotaLimits | null): Promise<void> {
    const values = { customLimits: limits ? 1 : 0, softLimit: limits?.soft ?? null, hardLimit: limits?.hard ?? null };
    await this.db.insert(quotaAccounts).values({ accountId, ...values }).onConflictDoUpdate({ target: quotaAccounts.accountId, set: values });
  }
  async setSuspended(accountId: string, suspendedAt: number | null): Promise<void> {
    await this.db.insert(quotaAccounts).values({ accountId, suspendedAt }).onConflictDoUpdate({ target: quotaAccounts.accountId, set: { suspendedAt } });
  }
  async setSponsor(accountId: string, sponsorId: string | null): Promise<void> {
    await this.db.insert(quotaAccounts).values({ accountId, sponsorId }).onConflictDoUpdate({ target: quotaAccounts.accountId, set: { sponsorId } });
  }
  async findBlob(contentHash: string): Promise<BlobRecord | null> {
    return this.#blob(this.db, contentHash);
  }
  async listChargedBlobs(accountId: string): Promise<BlobRecord[]> {
    return this.db.select().from(blobs).where(eq(blobs.chargedTo, accountId)).orderBy(blobs.storedAt, blobs.contentHash);
  }
  async cacheFederated(input: { receiver: string; peer: string; contentHash: string; size: number; budget: number | null }, now: number): Promise<FederatedCacheOutcome> {
    return this.db.transaction(async (tx): Promise<FederatedCacheOutcome> => {
      await this.#blobLock(tx, 'shared');
      // The receiver's row serialises its budget check against its other cache fills.
      await this.#lockPayer(tx, input.receiver);
      const ref = { receiver: input.receiver, peer: input.peer, contentHash: input.contentHash };
      const [known] = await tx
        .select({ h: federatedRefs.contentHash })
        .from(federatedRefs)
        .where(and(eq(federatedRefs.receiver, input.receiver), eq(federatedRefs.peer, input.peer), eq(federatedRefs.contentHash, input.contentHash)));
      if (known) return 'merged';
      if (await this.#blob(tx, input.contentHash)) {
        await tx.insert(federatedRefs).values(ref).onConflictDoNothing();
        return 'merged';
      }
      if (input.budget !== null) {
        const [spent] = await rowsOf<{ n: string | number }>(
          tx,
          sql`SELECT coalesce(sum(${blobs.size}), 0) AS n FROM ${blobs} WHERE ${blobs.chargedTo} = ${input.receiver} AND ${blobs.peer} = ${input.peer}`,
        );
        if (Number(spent?.n ?? 0) + input.size > input.budget) return 'over_budget';
      }
      const stored = await this.#storeBlob(tx, input.contentHash, input.size, input.receiver, input.peer, now);
      await tx.insert(federatedRefs).values(ref).onConflictDoNothing();
      return stored ? 'cached' : 'merged';
    });
  }
  async evictFederated(receiver: string, peer: string, contentHash: string): Promise<boolean> {
    const r = await this.db
      .delete(federatedRefs)
      .where(and(eq(federatedRefs.receiver, receiver), eq(federatedRefs.peer, peer), eq(federatedRefs.contentHash, contentHash)))
      .returning({ h: federatedRefs.contentHash });
    return r.length === 1;
  }
  async sweep(now: number): Promise<SweepResult> {
    return this.db.transaction(async (tx): Promise<SweepResult> => {
      await this.#blobLock(tx, 'exclusive');
      // Payer rows first, in a fixed order, as every other writer takes them first too.
      const payers = await tx
        .selectDistinct({ payerId: uploadSessions.payerId })
        .from(uploadSessions)
        .where(and(sql`${uploadSessions.state} IN ${OPEN}`, sql`${uploadSessions.expiresAt} <= ${now}`))
        .orderBy(uploadSessions.payerId);
      const expiredUploads: string[] = [];
      for (const { payerId } of payers) {
        await this.#lockPayer(tx, payerId);
        expiredUploads.push(...(await this.#expire(tx, payerId, now)));
      }
      await tx.delete(assets).where(and(eq(assets.state, 'pending_drop'), sql`${assets.dropExpiresAt} <= ${now}`));
      const gone = await tx
        .delete(blobs)
        .where(
          and(
            sql`NOT EXISTS (SELECT 1 FROM ${assetBlobs} r WHERE r.content_hash = ${blobs.contentHash})`,
            sql`NOT EXISTS (SELECT 1 FROM ${federatedRefs} f WHERE f.content_hash = ${blobs.contentHash})`,
          ),
        )
        .returning({ contentHash: blobs.contentHash, size: blobs.size, chargedTo: blobs.chargedTo });
      const swept: SweptBlob[] = gone.sort((a, b) => (a.contentHash < b.contentHash ? -1 : a.contentHash > b.contentHash ? 1 : 0));
      const credits = new Map<string, number>();
      for (const b of swept) credits.set(b.chargedTo, (credits.get(b.chargedTo) ?? 0) + b.size);
      for (const [accountId, size] of [...credits].sort(([a], [b]) => (a < b ? -1 : 1))) await this.#addCharged(tx, accountId, -size);
      return { swept, expiredUploads };
    });
  }

  // UploadSessions

  async openUpload(session: UploadSessionRecord, hard: number | null, now: number): Promise<OpenUploadOutcome> {
    // The hottest writer, so it is kept to four statements between BEGIN and COMMIT.
    return this.db.transaction(async (tx): Promise<OpenUploadOutcome> => {
      // Creates the payer's row if needed and, either way, locks it and returns it: ON CONFLICT DO
      // UPDATE takes the row lock, so creations for one payer queue here until this one commits.
      const [row] = await tx
        .insert(quotaAccounts)
        .values({ accountId: session.payerId })
        .onConflictDoUpdate({ target: quotaAccounts.accountId, set: { accountId: sql`excluded.account_id` } })
        .returning({ charged: quotaAccounts.charged, reserved: quotaAccounts.reserved });
      const [expired] = await rowsOf<{ released: string | number }>(
        tx,
        sql`WITH e AS (UPDATE ${uploadSessions} SET state = 'Expired'
              WHERE ${uploadSessions.payerId} = ${session.payerId} AND ${uploadSessions.state} IN ${OPEN} AND ${uploadSessions.expiresAt} <= ${now}
              RETURNING ${uploadSessions.declaredSize})
            SELECT coalesce(sum(declared_size), 0) AS released FROM e`,
      );
      const released = Number(expired?.released ?? 0);
      const reserved = row!.reserved - released;
      if (hard !== null && row!.charged + reserved + session.declaredSize > hard) {
        if (released > 0) await this.#addReserved(tx, session.payerId, -released);
        return 'exceeded';
      }
      const merged = session.contentHash !== null && (await this.#blob(tx, session.contentHash)) !== null;
      await tx.insert(uploadSessions).values({ ...session, state: merged ? 'Merged' : 'Pending' });
      const delta = (merged ? 0 : session.declaredSize) - released;
      if (delta !== 0) await this.#addReserved(tx, session.payerId, delta);
      return merged ? 'merged' : 'reserved';
    });
  }
  async findUpload(id: string): Promise<UploadSessionRecord | null> {
    const [r] = await this.db.select().from(uploadSessions).where(eq(uploadSessions.id, id));
    return r ?? null;
  }
  async #setUploadState(id: string, state: 'Uploading' | 'WaitingForProcessing' | 'Pending', received: { size: number; hash: string } | null, now: number): Promise<boolean> {
    const r = await this.db
      .update(uploadSessions)
      .set({ state, receivedSize: received?.size ?? null, receivedHash: received?.hash ?? null })
      .where(and(eq(uploadSessions.id, id), sql`${uploadSessions.state} IN ${OPEN}`, sql`${uploadSessions.expiresAt} > ${now}`))
      .returning({ id: uploadSessions.id });
    return r.length === 1;
  }
  async markUploading(id: string, now: number): Promise<boolean> {
    return this.#setUploadState(id, 'Uploading', null, now);
  }
  async markReceived(id: string, received: { size: number; hash: string } | null, now: number): Promise<boolean> {
    return this.#setUploadState(id, received ? 'WaitingForProcessing' : 'Pending', received, now);
  }
  async completeUpload(input: CompleteUpload, now: number): Promise<CompleteOutcome> {
    return this.db.transaction(async (tx): Promise<CompleteOutcome> => {
      await this.#blobLock(tx, 'shared');
      const [head] = await tx.select({ payerId: uploadSessions.payerId }).from(uploadSessions).where(eq(uploadSessions.id, input.uploadId));
      if (!head) return 'not_open';
      await this.#lockPayer(tx, head.payerId);
      // The session row itself: of two racing finalizes, the second sees the first's outcome.
      const [s] = await tx.select().from(uploadSessions).where(eq(uploadSessions.id, input.uploadId)).for('update');
      if (!s) return 'not_open';
      const binding = s.state === 'Merged' && s.assetId === null;
      const open = (s.state === 'Pending' || s.state === 'Uploading' || s.state === 'WaitingForProcessing') && now < s.expiresAt;
      if (!binding && !open) return 'not_open';
      if ('attachTo' in input.asset) {
        // FOR SHARE keeps a concurrent purge from deleting the asset under the new reference.
        const [target] = await tx.select({ state: assets.state }).from(assets).where(eq(assets.id, input.asset.attachTo)).for('share');
        if (!target || target.state === 'pending_drop') return 'asset_missing';
      }
      if (binding && (await this.#blob(tx, input.contentHash)) === null) return 'blob_missing';
      let outcome: CompleteOutcome = 'merged';
      if (!binding) {
        await this.#addReserved(tx, s.payerId, -s.declaredSize);
        if (await this.#storeBlob(tx, input.contentHash, input.size, s.payerId, null, now)) outcome = 'completed';
      }
      const size = (await this.#blob(tx, input.contentHash))!.size;
      let assetId: string;
      if ('attachTo' in input.asset) {
        assetId = input.asset.attachTo;
      } else {
        const c = input.asset.create;
        assetId = c.id;
        await tx.insert(assets).values({
          id: c.id,
          ownerId: c.ownerId,
          uploaderId: s.uploaderId,
          state: c.dropExpiresAt === null ? 'live' : 'pending_drop',
          createdAt: now,
          trashedAt: null,
          dropExpiresAt: c.dropExpiresAt,
        });
      }
      await tx.insert(assetBlobs).values({ assetId, kind: s.kind, contentHash: input.contentHash, size });
      await tx
        .update(uploadSessions)
        .set({ state: outcome === 'completed' ? 'Completed' : 'Merged', assetId })
        .where(eq(uploadSessions.id, s.id));
      return outcome;
    });
  }
  async cancelUpload(id: string, now: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [head] = await tx.select({ payerId: uploadSessions.payerId }).from(uploadSessions).where(eq(uploadSessions.id, id));
      if (!head) return false;
      await this.#lockPayer(tx, head.payerId);
      const [r] = await tx
        .update(uploadSessions)
        .set({ state: 'Cancelled' })
        .where(and(eq(uploadSessions.id, id), sql`${uploadSessions.state} IN ${OPEN}`, sql`${uploadSessions.expiresAt} > ${now}`))
        .returning({ payerId: uploadSessions.payerId, declaredSize: uploadSessions.declaredSize });
      if (!r) return false;
      await this.#addReserved(tx, r.payerId, -r.declaredSize);
      return true;
    });
  }
  async countInFlightUploads(albumId: string, now: number): Promise<number> {
    const [r] = await rowsOf<{ n: string | number }>(
      this.db,
      sql`SELECT count(*) AS n FROM ${uploadSessions} WHERE ${uploadSessions.albumId} = ${albumId} AND ${uploadSessions.state} IN ${OPEN} AND ${uploadSessions.expiresAt} > ${now}`,
    );
    return Number(r?.n ?? 0);
  }

  // AssetCatalog

  async findAsset(id: string): Promise<AssetRecord | null> {
    const [r] = await this.db.select().from(assets).where(eq(assets.id, id));
    return r ? this.#toAsset(r) : null;
  }
  async #toAsset(r: AssetRow): Promise<AssetRecord> {
    const refs = await this.db
      .select({ kind: assetBlobs.kind, contentHash: assetBlobs.contentHash, size: assetBlobs.size })
      .from(assetBlobs)
      .where(eq(assetBlobs.assetId, r.id))
      .orderBy(asc(assetBlobs.seq));
    return { ...r, blobs: refs as AssetBlob[] };
  }
  async trashAsset(id: string, now: number): Promise<boolean> {
    const r = await this.db
      .update(assets)
      .set({ state: 'trashed', trashedAt: now })
      .where(and(eq(assets.id, id), eq(assets.state, 'live')))
      .returning({ id: assets.id });
    return r.length === 1;
  }
  async restoreAsset(id: string): Promise<boolean> {
    const r = await this.db
      .update(assets)
      .set({ state: 'live', trashedAt: null })
      .where(and(eq(assets.id, id), eq(assets.state, 'trashed')))
      .returning({ id: assets.id });
    return r.length === 1;
  }
  async purgeAsset(id: string): Promise<boolean> {
    // asset_blobs rows go with the asset (ON DELETE CASCADE): the references drop, the bytes stay charged.
    const r = await this.db
      .delete(assets)
      .where(and(eq(assets.id, id), sql`${assets.state} IN ('trashed', 'pending_drop')`))
      .returning({ id: assets.id });
    return r.length === 1;
  }
  async emptyTrash(ownerId: string): Promise<number> {
    const r = await this.db
      .delete(assets)
      .where(and(eq(assets.ownerId, ownerId), eq(assets.state, 'trashed')))
      .returning({ id: assets.id });
    return r.length;
  }
  async adoptDrop(id: string, now: number): Promise<boolean> {
    const r = await this.db
      .update(assets)
      .set({ state: 'live', dropExpiresAt: null })
      .where(and(eq(assets.id, id), eq(assets.state, 'pending_drop'), sql`${assets.dropExpiresAt} > ${now}`))
      .returning({ id: assets.id });
    return r.length === 1;
  }
  async replaceMetadata(input: MetadataReplace, now: number): Promise<'replaced' | 'not_live'> {
    return this.db.transaction(async (tx): Promise<'replaced' | 'not_live'> => {
      await this.#blobLock(tx, 'shared');
      await this.#lockPayer(tx, input.payerId);
      // The asset row: two replacements of one asset queue here, so one metadata reference remains.
      const [a] = await tx.select({ state: assets.state }).from(assets).where(eq(assets.id, input.assetId)).for('update');
      if (!a || a.state !== 'live') return 'not_live';
      await this.#storeBlob(tx, input.contentHash, input.size, input.payerId, null, now);
      await tx.delete(assetBlobs).where(and(eq(assetBlobs.assetId, input.assetId), eq(assetBlobs.kind, 'metadata')));
      const size = (await this.#blob(tx, input.contentHash))!.size;
      await tx.insert(assetBlobs).values({ assetId: input.assetId, kind: 'metadata', contentHash: input.contentHash, size });
      return 'replaced';
    });
  }
}
