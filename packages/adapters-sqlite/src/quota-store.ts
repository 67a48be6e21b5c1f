import type Database from 'better-sqlite3';
import { and, asc, eq, gt, isNull } from 'drizzle-orm';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  assetChanges,
  linkChanges,
  decideAssetTransition,
  decideCompletion,
  decideOpenGroup,
  DROP_LAPSED,
  ok,
  payerIdOf,
  type AssetAction,
  type AssetBlob,
  type AssetCatalog,
  type AssetRecord,
  type BlobReference,
  type AssetState,
  type BlobRecord,
  type CompleteOutcome,
  type CompleteUpload,
  type MetadataEditRefusal,
  type MetadataReplace,
  type TrashedAsset,
  type LinkRecord,
  type NewUpload,
  type OpenRefusal,
  type QuotaAccountRecord,
  type QuotaLedger,
  type QuotaLimits,
  type QuotaPolicy,
  type Result,
  type SweepResult,
  type SweptBlob,
  type UploadSessionRecord,
  type UploadSessions,
  UPLOAD_IN_FLIGHT,
  UPLOAD_LAPSED,
} from '@strongroom/core';
import {
  decideMetadataReplace,
  EMPTY_TRASH_CANDIDATE_STATES,
  peerKey,
  settledHardSince,
} from '@strongroom/core/internal';
import {
  Admission,
  groupCommitOf,
  filterSql,
  loadOf,
  quotaAccountFromRow,
  sqlStringList,
  type GroupCommit,
  type QuotaAccountRow,
} from '@strongroom/sql-common';
import * as schema from './schema/index.js';
import { assets, blobs, linkDrops, links, quotaAccounts, syncChanges, uploadSessions } from './schema/index.js';
import { appendSyncChanges } from './sync-store.js';

type Db = BetterSQLite3Database<typeof schema>;
type AssetRow = typeof assets.$inferSelect;

/** The WHERE that finds open sessions fast; which states are open is core's to say. */
/** Core's upload and drop filters as this store's statements apply them (the instant bound as `?`). */
const IN_FLIGHT = filterSql(UPLOAD_IN_FLIGHT);
const IN_FLIGHT_AT_NOW = filterSql(UPLOAD_IN_FLIGHT, (name) => `@${name}`);
const LAPSED = filterSql(UPLOAD_LAPSED);
const DROP_LAPSED_SQL = filterSql(DROP_LAPSED);

/**
 * The quota ledger, upload sessions and asset references over SQLite. Counters (charged,
 * reserved) live on the account row and move in the same transaction as the rows they summarise.
 * Every decision is core's (`decideOpenGroup`, `decideCompletion`, `decideMetadataReplace`,
 * `settledHardSince`): each method reads the facts, decides and writes in one BEGIN IMMEDIATE
 * transaction, so concurrent processes serialise on the write lock and many concurrent creations
 * can never pass the hard limit together.
 */
export class SqliteQuotaStore implements QuotaLedger, UploadSessions, AssetCatalog {
  readonly db: Db;
  /** Every statement this store runs, prepared once on its connection (better-sqlite3's `prepare`). */
  readonly #statements;

  /** Upload-session writes share one fsync per event-loop turn; each is its own savepoint (sql-common's batching). */
  readonly #commits: GroupCommit;
  /** The openings of this turn, not yet handed to the group commit (see openUpload). */
  #openings: OpeningGroup | null = null;
  /** Openings accepted and not yet answered, against the connection's queue bound (a queue of its own). */
  readonly #openingsHeld: Admission;

  constructor(readonly sqlite: Database.Database) {
    this.#commits = groupCommitOf(sqlite);
    this.#openingsHeld = new Admission(loadOf(sqlite));
    this.db = drizzle(sqlite, { schema });
    const p = (text: string) => sqlite.prepare(text);
    this.#statements = {
      account: p('SELECT * FROM quota_accounts WHERE account_id = ?'),
      ensure: p('INSERT INTO quota_accounts (account_id) VALUES (?) ON CONFLICT DO NOTHING'),
      expirePayer: p(
        `UPDATE upload_sessions SET state = 'Expired' WHERE payer_id = ? AND ${LAPSED} RETURNING declared_size`,
      ),
      expireAll: p(
        `UPDATE upload_sessions SET state = 'Expired' WHERE ${LAPSED} RETURNING id, payer_id, declared_size`,
      ),
      /** Sessions that left an open state: their bytes and their count. */
      release: p(
        'UPDATE quota_accounts SET reserved = reserved - ?, open_uploads = open_uploads - ? WHERE account_id = ?',
      ),
      addCharged: p('UPDATE quota_accounts SET charged = charged + ? WHERE account_id = ?'),
      /** A completed session: its reservation released, and hard_since as the completion leaves it. */
      releaseCompleted: p(
        'UPDATE quota_accounts SET reserved = reserved - ?, open_uploads = open_uploads - 1, hard_since = ? WHERE account_id = ?',
      ),
      /** A payer's reservations and hard_since after a group of openings; the row may not exist yet. */
      reserveOpenings: p(
        'INSERT INTO quota_accounts (account_id, reserved, open_uploads, hard_since) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT (account_id) DO UPDATE SET reserved = reserved + excluded.reserved, open_uploads = open_uploads + excluded.open_uploads, hard_since = excluded.hard_since',
      ),
      setHardSince: p('UPDATE quota_accounts SET hard_since = ? WHERE account_id = ?'),
      /** An owner's trash, restore, purge or trash-empty: the evidence its follow-up writes are admitted on. */
      stampTrashActivity: p(
        'INSERT INTO quota_accounts (account_id, trash_activity_at) VALUES (?, ?) ON CONFLICT (account_id) DO UPDATE SET trash_activity_at = excluded.trash_activity_at',
      ),
      blob: p('SELECT content_hash, size, charged_to, peer, stored_at FROM blobs WHERE content_hash = ?'),
      insertBlob: p(
        'INSERT INTO blobs (content_hash, size, charged_to, peer, stored_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
      ),
      insertUpload: p(
        // Positional: named parameters are looked up on the bound object one by one through V8's
        // generic property access, which on the hottest insert costs more than its binding.
        `INSERT INTO upload_sessions (id, uploader_id, payer_id, kind, declared_size, content_hash, source_peer, album_id, intent_id, drop_link_id_hash, state,
         received_size, received_hash, asset_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      openFromPeer: p(
        `SELECT coalesce(sum(declared_size), 0) AS n FROM upload_sessions WHERE payer_id = ? AND ${IN_FLIGHT} AND source_peer = ?`,
      ),
      link: p('SELECT * FROM links WHERE id_hash = ?'),
      acceptDrop: p('UPDATE links SET accepted_bytes = accepted_bytes + ? WHERE id_hash = ?'),
      insertDrop: p(
        'INSERT INTO link_drops (upload_id, link_id_hash, owner_id, token_hash, declared_size, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      revokeLink: p('UPDATE links SET revoked_at = ? WHERE id_hash = ? AND owner_id = ? AND revoked_at IS NULL'),
      cancelDrops: p(
        `UPDATE upload_sessions SET state = 'Cancelled' WHERE drop_link_id_hash = ? AND ${IN_FLIGHT} RETURNING id, payer_id, declared_size`,
      ),
      upload: p('SELECT * FROM upload_sessions WHERE id = ?'),
      setUploadState: p(
        `UPDATE upload_sessions SET state = @state, received_size = @size, received_hash = @hash WHERE id = @id AND ${IN_FLIGHT_AT_NOW}`,
      ),
      finishUpload: p('UPDATE upload_sessions SET state = ?, asset_id = ? WHERE id = ?'),
      assetState: p('SELECT state FROM assets WHERE id = ?'),
      cancelUpload: p(
        `UPDATE upload_sessions SET state = 'Cancelled' WHERE id = ? AND ${IN_FLIGHT} RETURNING payer_id, declared_size`,
      ),
      inFlight: p(`SELECT count(*) AS n FROM upload_sessions WHERE album_id = ? AND ${IN_FLIGHT}`),
      asset: p('SELECT * FROM assets WHERE id = ?'),
      /** The album an asset lies in: its original's upload session's (core's albums/asset-album.ts). */
      assetAlbum: p('SELECT album_id FROM upload_sessions WHERE id = ?'),
      // Candidates narrowed by the (owner, state) index to the states core says can apply; core decides each row.
      // The owner's rows in the states core says empty_trash can take, by the (owner, state) index;
      // the album is the original's session's.
      trashCandidates: p(
        `SELECT a.id AS assetId, s.album_id AS albumId FROM assets a LEFT JOIN upload_sessions s ON s.id = a.id
          WHERE a.owner_id = ? AND a.state IN ${sqlStringList(EMPTY_TRASH_CANDIDATE_STATES)} ORDER BY a.id`,
      ),
      setAssetState: p('UPDATE assets SET state = ?, trashed_at = ?, drop_expires_at = ? WHERE id = ?'),
      deleteAsset: p('DELETE FROM assets WHERE id = ?'),
      assetBlobs: p('SELECT kind, content_hash, size FROM asset_blobs WHERE asset_id = ? ORDER BY seq'),
      // By the hash index, then each asset by its key; the album is its original's session's.
      blobReferences: p(
        `SELECT DISTINCT a.id AS assetId, a.owner_id AS ownerId, a.state AS state, s.album_id AS albumId
           FROM asset_blobs b JOIN assets a ON a.id = b.asset_id LEFT JOIN upload_sessions s ON s.id = a.id
          WHERE b.content_hash = ? AND a.owner_id = ? ORDER BY a.id`,
      ),
      insertAsset: p(
        'INSERT INTO assets (id, owner_id, uploader_id, state, created_at, trashed_at, drop_expires_at) VALUES (?, ?, ?, ?, ?, NULL, ?)',
      ),
      insertRef: p('INSERT INTO asset_blobs (asset_id, kind, content_hash, size) VALUES (?, ?, ?, ?)'),
      metadataSizes: p(`SELECT size FROM asset_blobs WHERE asset_id = ? AND kind = 'metadata'`),
      dropMetadata: p(`DELETE FROM asset_blobs WHERE asset_id = ? AND kind = 'metadata'`),
      fedInsert: p('INSERT INTO federated_refs (receiver, peer, content_hash) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'),
      fedSpent: p('SELECT coalesce(sum(size), 0) AS n FROM blobs WHERE charged_to = ? AND peer = ?'),
      sweepBlobs: p(
        `DELETE FROM blobs WHERE NOT EXISTS (SELECT 1 FROM asset_blobs r WHERE r.content_hash = blobs.content_hash)
         AND NOT EXISTS (SELECT 1 FROM federated_refs f WHERE f.content_hash = blobs.content_hash)
         RETURNING content_hash, size, charged_to`,
      ),
    };
  }

  /** Expires the payer's lapsed open sessions and releases their reservations; returns how many. */
  #expire(payerId: string, now: number): number {
    const rows = this.#statements.expirePayer.all(payerId, now) as { declared_size: number }[];
    if (rows.length > 0)
      this.#statements.release.run(
        rows.reduce((n, r) => n + r.declared_size, 0),
        rows.length,
        payerId,
      );
    return rows.length;
  }

  #account(accountId: string): QuotaAccountRecord {
    return this.#ledgerRow(accountId).record;
  }

  /** The account's ledger record and, from the same row, how many sessions it pays for are open. */
  #ledgerRow(accountId: string): { record: QuotaAccountRecord; openUploads: number } {
    const r = this.#statements.account.get(accountId) as Record<string, unknown> | undefined;
    const row: QuotaAccountRow | undefined = r && {
      charged: r.charged as number,
      reserved: r.reserved as number,
      customLimits: r.custom_limits as number,
      softLimit: r.soft_limit as number | null,
      hardLimit: r.hard_limit as number | null,
      hardSince: r.hard_since as number | null,
      suspendedAt: r.suspended_at as number | null,
      sponsorId: r.sponsor_id as string | null,
      trashActivityAt: r.trash_activity_at as number | null,
    };
    return { record: quotaAccountFromRow(accountId, row), openUploads: (r?.open_uploads as number | undefined) ?? 0 };
  }

  /** Brings hard_since in line with the row as it now stands (caller is inside a transaction). */
  #settle(accountId: string, policy: QuotaPolicy, now: number): number | null {
    const r = this.#account(accountId);
    const hardSince = settledHardSince(r, policy, now);
    if (hardSince !== r.hardSince) this.#statements.setHardSince.run(hardSince, accountId);
    return hardSince;
  }

  #storeBlob(contentHash: string, size: number, chargedTo: string, peer: string | null, now: number): boolean {
    if (this.#statements.insertBlob.run(contentHash, size, chargedTo, peer, now).changes !== 1) return false;
    this.#statements.ensure.run(chargedTo);
    this.#statements.addCharged.run(size, chargedTo);
    return true;
  }

  #blob(contentHash: string): BlobRecord | null {
    const r = this.#statements.blob.get(contentHash) as
      | { content_hash: string; size: number; charged_to: string; peer: string | null; stored_at: number }
      | undefined;
    return r
      ? { contentHash: r.content_hash, size: r.size, chargedTo: r.charged_to, peer: r.peer, storedAt: r.stored_at }
      : null;
  }

  // QuotaLedger

  async readLedger(accountId: string, now: number): Promise<QuotaAccountRecord> {
    return this.sqlite
      .transaction(() => {
        this.#expire(accountId, now);
        return this.#account(accountId);
      })
      .immediate();
  }
  async settleHardSince(accountId: string, policy: QuotaPolicy, now: number): Promise<number | null> {
    return this.sqlite.transaction(() => this.#settle(accountId, policy, now)).immediate();
  }
  async setLimits(accountId: string, limits: QuotaLimits | null): Promise<void> {
    const values = { customLimits: limits ? 1 : 0, softLimit: limits?.soft ?? null, hardLimit: limits?.hard ?? null };
    this.db
      .insert(quotaAccounts)
      .values({ accountId, ...values })
      .onConflictDoUpdate({ target: quotaAccounts.accountId, set: values })
      .run();
  }
  async setSuspended(accountId: string, suspendedAt: number | null): Promise<void> {
    this.db
      .insert(quotaAccounts)
      .values({ accountId, suspendedAt })
      .onConflictDoUpdate({ target: quotaAccounts.accountId, set: { suspendedAt } })
      .run();
  }
  async findBlob(contentHash: string): Promise<BlobRecord | null> {
    return this.#blob(contentHash);
  }
  async listBlobs(after: string | null, limit: number): Promise<BlobRecord[]> {
    const q = this.db.select().from(blobs);
    return (after === null ? q : q.where(gt(blobs.contentHash, after)))
      .orderBy(asc(blobs.contentHash))
      .limit(limit)
      .all();
  }
  async listChargedBlobs(accountId: string): Promise<BlobRecord[]> {
    return this.db
      .select()
      .from(blobs)
      .where(eq(blobs.chargedTo, accountId))
      .orderBy(blobs.storedAt, blobs.contentHash)
      .all();
  }
  async evictFederated(receiver: string, peer: string, contentHash: string): Promise<boolean> {
    return (
      this.sqlite
        .prepare('DELETE FROM federated_refs WHERE receiver = ? AND peer = ? AND content_hash = ?')
        .run(receiver, peer, contentHash).changes === 1
    );
  }
  async sweep(policy: QuotaPolicy, now: number): Promise<SweepResult> {
    return this.sqlite
      .transaction((): SweepResult => {
        const moved = new Set<string>();
        const expired = this.#statements.expireAll.all(now) as {
          id: string;
          payer_id: string;
          declared_size: number;
        }[];
        for (const e of expired) {
          this.#statements.release.run(e.declared_size, 1, e.payer_id);
          moved.add(e.payer_id);
        }
        this.sqlite.prepare(`DELETE FROM assets WHERE ${DROP_LAPSED_SQL}`).run(now);
        const gone = this.#statements.sweepBlobs.all() as { content_hash: string; size: number; charged_to: string }[];
        const swept: SweptBlob[] = gone.map((g) => ({
          contentHash: g.content_hash,
          size: g.size,
          chargedTo: g.charged_to,
        }));
        for (const b of swept) {
          this.#statements.addCharged.run(-b.size, b.chargedTo);
          moved.add(b.chargedTo);
        }
        for (const accountId of moved) this.#settle(accountId, policy, now);
        return { swept, expiredUploads: expired.map((e) => e.id) };
      })
      .immediate();
  }

  // UploadSessions

  /**
   * Openings that arrive in the same turn of the event loop are decided and written together, as
   * one write of the turn's group commit: each row read once, lapsed sessions expired once per
   * payer, one `decideOpenGroup` (each opening sees the reservations of those before it, exactly as
   * one at a time would), one insert per session and one counter update per payer. If any
   * statement fails, the group is rolled back and every opening in it is refused with the error.
   */
  openUpload(request: NewUpload, policy: QuotaPolicy, now: number): Promise<Result<UploadSessionRecord, OpenRefusal>> {
    return this.#enqueueOpening(request, null, policy, now);
  }
  /** A drop joins the turn's group like any opening: its link, session, reservation and drop record commit together. */
  openDrop(
    request: NewUpload & { readonly dropLinkIdHash: string },
    tokenHash: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<UploadSessionRecord, OpenRefusal>> {
    return this.#enqueueOpening(request, tokenHash, policy, now);
  }
  async revokeLink(
    ownerId: string,
    linkIdHash: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<{ revoked: boolean; cancelled: string[] }> {
    return this.#commits.run(() => {
      if (this.#statements.revokeLink.run(now, linkIdHash, ownerId).changes !== 1)
        return { revoked: false, cancelled: [] };
      appendSyncChanges(this.sqlite, ownerId, linkChanges(linkIdHash, true), now);
      const rows = this.#statements.cancelDrops.all(linkIdHash, now) as {
        id: string;
        payer_id: string;
        declared_size: number;
      }[];
      const moved = new Set<string>();
      for (const r of rows) {
        this.#statements.release.run(r.declared_size, 1, r.payer_id);
        moved.add(r.payer_id);
      }
      for (const payerId of moved) this.#settle(payerId, policy, now);
      return { revoked: true, cancelled: rows.map((r) => r.id) };
    });
  }
  /**
   * One savepoint of the turn's commit, under the write lock: the row is read only while still in
   * clear, copied under its hash (every column as stored, whatever later migrations add), its
   * references moved, and the clear row deleted. Copied, not updated in place: link_drops' foreign
   * key holds the key. SQLite leaves what it deletes in the file's free space and the old pages in
   * its write-ahead log, so the move overwrites what it deletes (secure_delete), and the start
   * checkpoints the log once every link has moved (LinkStore.purgeMovedLinkIds): a copy of the
   * file then holds the clear id in no free page and no log frame.
   */
  async rekeyLink(clearId: string, to: { idHash: string; sealedId: string }): Promise<boolean> {
    const moved = await this.#commits.run(() => {
      const row = this.db
        .select()
        .from(links)
        .where(and(eq(links.idHash, clearId), isNull(links.sealedId)))
        .get();
      if (!row) return false;
      const secureDelete = this.sqlite.pragma('secure_delete', { simple: true }) as number;
      this.sqlite.pragma('secure_delete = ON');
      try {
        this.db
          .insert(links)
          .values({ ...row, idHash: to.idHash, sealedId: to.sealedId })
          .run();
        this.db.update(linkDrops).set({ linkIdHash: to.idHash }).where(eq(linkDrops.linkIdHash, clearId)).run();
        this.db
          .update(uploadSessions)
          .set({ dropLinkIdHash: to.idHash })
          .where(eq(uploadSessions.dropLinkIdHash, clearId))
          .run();
        // Its sync entry (the migration that began the log keyed it by the row's key then) moves too.
        this.db
          .update(syncChanges)
          .set({ objectId: to.idHash })
          .where(and(eq(syncChanges.kind, 'link'), eq(syncChanges.objectId, clearId)))
          .run();
        this.db.delete(links).where(eq(links.idHash, clearId)).run();
      } finally {
        this.sqlite.pragma(`secure_delete = ${secureDelete}`);
      }
      return true;
    });
    return moved;
  }

  #enqueueOpening(
    request: NewUpload,
    tokenHash: string | null,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<UploadSessionRecord, OpenRefusal>> {
    try {
      this.#openingsHeld.admit();
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      let group = this.#openings;
      if (group === null || group.policy !== policy) {
        const fresh: OpeningGroup = { policy, openings: [] };
        group = fresh;
        this.#openings = fresh;
        this.#commits
          .run(() => {
            // Later arrivals start a new group from here on.
            if (this.#openings === fresh) this.#openings = null;
            return this.#openGroup(fresh);
          })
          .then(
            (results) => {
              this.#openingsHeld.release(fresh.openings.length);
              fresh.openings.forEach((o, i) => o.resolve(results[i]!));
            },
            (error: unknown) => {
              // Refused whole (error.server.busy when the commit queue is full, or a broken group
              // commit) before its write ran, or failed whole: nothing of the group was kept.
              // Later arrivals start a new group.
              if (this.#openings === fresh) this.#openings = null;
              this.#openingsHeld.release(fresh.openings.length);
              fresh.openings.forEach((o) => o.reject(error));
            },
          );
      }
      group.openings.push({ request, tokenHash, now, resolve, reject });
    });
  }

  #openGroup({ openings, policy }: OpeningGroup): Result<UploadSessionRecord, OpenRefusal>[] {
    const rows = new Map<string, QuotaAccountRecord>();
    // Open sessions per account, from the same row reads (the counter, once lapsed ones are expired).
    const openSessions = new Map<string, number>();
    const read = (accountId: string) => {
      const { record, openUploads } = this.#ledgerRow(accountId);
      rows.set(accountId, record);
      openSessions.set(accountId, openUploads);
    };
    for (const { request } of openings) if (!rows.has(request.uploaderId)) read(request.uploaderId);
    // Sessions lapsed by the latest arrival are lapsed for every opening of the group; a payer
    // whose lapsed sessions were expired is read again, so its counter counts the live ones only.
    const latest = Math.max(...openings.map((o) => o.now));
    for (const payerId of new Set([...rows.values()].map(payerIdOf))) {
      if (this.#expire(payerId, latest) > 0 || !rows.has(payerId)) read(payerId);
    }
    const fromPeer = new Map<string, number>();
    const linkRows = new Map<string, LinkRecord>();
    for (const { request } of openings) {
      const payerId = payerIdOf(rows.get(request.uploaderId)!);
      if (request.sourcePeer !== null && !fromPeer.has(peerKey(payerId, request.sourcePeer))) {
        const open = (this.#statements.openFromPeer.get(payerId, latest, request.sourcePeer) as { n: number }).n;
        const cached = (this.#statements.fedSpent.get(payerId, request.sourcePeer) as { n: number }).n;
        fromPeer.set(peerKey(payerId, request.sourcePeer), open + cached);
      }
      if (request.dropLinkIdHash !== null && !linkRows.has(request.dropLinkIdHash)) {
        const l = this.#statements.link.get(request.dropLinkIdHash) as Record<string, unknown> | undefined;
        if (l) linkRows.set(request.dropLinkIdHash, linkFromRow(l));
      }
    }
    const plan = decideOpenGroup({ accounts: rows, openSessions, fromPeer, links: linkRows }, openings, policy);
    plan.decisions.forEach((d, i) => {
      if (!d.ok) return;
      const u = d.value.session;
      this.#statements.insertUpload.run(
        u.id,
        u.uploaderId,
        u.payerId,
        u.kind,
        u.declaredSize,
        u.contentHash,
        u.sourcePeer,
        u.albumId,
        u.intentId,
        u.dropLinkIdHash,
        u.state,
        u.receivedSize,
        u.receivedHash,
        u.assetId,
        u.createdAt,
        u.expiresAt,
      );
      const tokenHash = openings[i]!.tokenHash;
      if (u.dropLinkIdHash !== null && tokenHash !== null)
        this.#statements.insertDrop.run(u.id, u.dropLinkIdHash, u.uploaderId, tokenHash, u.declaredSize, u.createdAt);
    });
    for (const [payerId, p] of plan.payers)
      this.#statements.reserveOpenings.run(payerId, p.reserve, p.opened, p.hardSince);
    for (const [linkIdHash, bytes] of plan.links) this.#statements.acceptDrop.run(bytes, linkIdHash);
    return plan.decisions.map((d) => (d.ok ? ok(d.value.session) : d));
  }

  async findUpload(id: string): Promise<UploadSessionRecord | null> {
    const r = this.db.select().from(uploadSessions).where(eq(uploadSessions.id, id)).get();
    return r ?? null;
  }
  async markUploading(id: string, now: number): Promise<boolean> {
    return this.#commits.run(
      () => this.#statements.setUploadState.run({ id, state: 'Uploading', size: null, hash: null, now }).changes === 1,
    );
  }
  async markReceived(id: string, received: { size: number; hash: string } | null, now: number): Promise<boolean> {
    const state = received ? 'WaitingForProcessing' : 'Pending';
    return this.#commits.run(
      () =>
        this.#statements.setUploadState.run({
          id,
          state,
          size: received?.size ?? null,
          hash: received?.hash ?? null,
          now,
        }).changes === 1,
    );
  }
  async completeUpload(input: CompleteUpload, policy: QuotaPolicy, now: number): Promise<CompleteOutcome> {
    return this.#commits.run((): CompleteOutcome => {
      const session = this.db.select().from(uploadSessions).where(eq(uploadSessions.id, input.uploadId)).get() ?? null;
      const target =
        input.asset !== null && 'attachTo' in input.asset
          ? (this.#statements.asset.get(input.asset.attachTo) as { owner_id: string; state: AssetState } | undefined)
          : undefined;
      const plan = decideCompletion(
        {
          session,
          storedBlobSize: this.#blob(input.contentHash)?.size ?? null,
          attachTarget: target?.state ?? null,
          payer: session && this.#account(session.payerId),
        },
        input,
        policy,
        now,
      );
      if (typeof plan === 'string') return plan;
      const payerId = plan.session.payerId;
      this.#statements.ensure.run(payerId);
      if (plan.newBlob) this.#storeBlob(plan.newBlob.contentHash, plan.newBlob.size, payerId, plan.newBlob.peer, now);
      this.#statements.releaseCompleted.run(plan.release, plan.hardSince, payerId);
      const c = plan.createAsset;
      if (c) this.#statements.insertAsset.run(c.id, c.ownerId, c.uploaderId, c.state, now, c.dropExpiresAt);
      if (plan.reference)
        this.#statements.insertRef.run(
          plan.assetId,
          plan.reference.kind,
          plan.reference.contentHash,
          plan.reference.size,
        );
      if (plan.federatedRef)
        this.#statements.fedInsert.run(
          plan.federatedRef.receiver,
          plan.federatedRef.peer,
          plan.federatedRef.contentHash,
        );
      this.#statements.finishUpload.run(plan.session.state, plan.assetId, plan.session.id);
      if (plan.reference && plan.assetId !== null) {
        if (c)
          appendSyncChanges(
            this.sqlite,
            c.ownerId,
            assetChanges(c.id, plan.session.id === c.id ? plan.session.albumId : this.#albumOf(c.id), null, c.state),
            now,
          );
        else if (target)
          appendSyncChanges(
            this.sqlite,
            target.owner_id,
            assetChanges(plan.assetId, this.#albumOf(plan.assetId), target.state, target.state),
            now,
          );
      }
      return { outcome: plan.outcome, session: plan.session };
    });
  }
  async cancelUpload(id: string, policy: QuotaPolicy, now: number): Promise<boolean> {
    return this.#commits.run((): boolean => {
      const r = this.#statements.cancelUpload.get(id, now) as { payer_id: string; declared_size: number } | undefined;
      if (!r) return false;
      this.#statements.release.run(r.declared_size, 1, r.payer_id);
      this.#settle(r.payer_id, policy, now);
      return true;
    });
  }
  async countInFlightUploads(albumId: string, now: number): Promise<number> {
    return (this.#statements.inFlight.get(albumId, now) as { n: number }).n;
  }

  // AssetCatalog

  async findAsset(id: string): Promise<AssetRecord | null> {
    const r = this.db.select().from(assets).where(eq(assets.id, id)).get();
    return r ? this.#toAsset(r) : null;
  }
  async blobReferences(contentHash: string, ownerId: string): Promise<BlobReference[]> {
    return this.#statements.blobReferences.all(contentHash, ownerId) as BlobReference[];
  }
  #toAsset(r: AssetRow): AssetRecord {
    const refs = this.#statements.assetBlobs.all(r.id) as {
      kind: AssetBlob['kind'];
      content_hash: string;
      size: number;
    }[];
    return { ...r, blobs: refs.map((b) => ({ kind: b.kind, contentHash: b.content_hash, size: b.size })) };
  }
  /**
   * One lifecycle step: the row is read inside an IMMEDIATE transaction (the database's write lock
   * is held from the read to the write, so no other connection or process moves the row between
   * them), core decides, and the write names the row by its id alone.
   */
  #transition(id: string, action: AssetAction, now: number): boolean {
    return this.#transitionOwner(id, action, now) !== null;
  }
  #albumOf(assetId: string): string | null {
    return (this.#statements.assetAlbum.get(assetId) as { album_id: string | null } | undefined)?.album_id ?? null;
  }
  /** `#transition`, answering the asset's owner when the step applied (null when it did not). */
  #transitionOwner(id: string, action: AssetAction, now: number): string | null {
    const a = this.#statements.asset.get(id) as
      | { owner_id: string; state: AssetState; trashed_at: number | null; drop_expires_at: number | null }
      | undefined;
    const t = decideAssetTransition(
      a ? { state: a.state, trashedAt: a.trashed_at, dropExpiresAt: a.drop_expires_at } : null,
      action,
    );
    if (!t.ok || !a) return null;
    // asset_blobs rows go with the asset (ON DELETE CASCADE): the references drop, the bytes stay charged.
    const changes =
      t.write === 'delete'
        ? this.#statements.deleteAsset.run(id).changes
        : this.#statements.setAssetState.run(t.next.state, t.next.trashedAt, t.next.dropExpiresAt, id).changes;
    if (changes !== 1) return null;
    appendSyncChanges(
      this.sqlite,
      a.owner_id,
      assetChanges(id, this.#albumOf(id), a.state, t.write === 'delete' ? null : t.next.state),
      now,
    );
    return a.owner_id;
  }
  /** A trash, restore or purge and, when it applied, the owner's trash activity, in one transaction. */
  async #trashActivity(id: string, action: AssetAction, now: number): Promise<boolean> {
    return this.sqlite
      .transaction(() => {
        const ownerId = this.#transitionOwner(id, action, now);
        if (ownerId !== null) this.#statements.stampTrashActivity.run(ownerId, now);
        return ownerId !== null;
      })
      .immediate();
  }
  async trashAsset(id: string, now: number): Promise<boolean> {
    return this.#trashActivity(id, { kind: 'trash', now }, now);
  }
  async restoreAsset(id: string, now: number): Promise<boolean> {
    return this.#trashActivity(id, { kind: 'restore' }, now);
  }
  async purgeAsset(id: string, now: number): Promise<boolean> {
    return this.#trashActivity(id, { kind: 'purge' }, now);
  }
  async listTrash(ownerId: string): Promise<TrashedAsset[]> {
    return this.#statements.trashCandidates.all(ownerId) as TrashedAsset[];
  }
  async emptyTrash(ownerId: string, assetIds: readonly string[], now: number): Promise<number> {
    const named = new Set(assetIds);
    return this.sqlite
      .transaction(() => {
        // Read again under the write lock: only the owner's rows named, each decided by core as it now stands.
        const rows = this.#statements.trashCandidates.all(ownerId) as TrashedAsset[];
        const n = rows.filter(
          (r) => named.has(r.assetId) && this.#transition(r.assetId, { kind: 'empty_trash' }, now),
        ).length;
        if (n > 0) this.#statements.stampTrashActivity.run(ownerId, now);
        return n;
      })
      .immediate();
  }
  async adoptDrop(id: string, now: number): Promise<boolean> {
    return this.sqlite.transaction(() => this.#transition(id, { kind: 'adopt', now }, now)).immediate();
  }
  async discardDrop(id: string): Promise<boolean> {
    // A pending drop was never synced: its discard records nothing (core's assetChanges), so no instant is needed.
    return this.sqlite.transaction(() => this.#transition(id, { kind: 'discard' }, 0)).immediate();
  }
  /**
   * Read, decided by core (`decideMetadataReplace`) and written in one IMMEDIATE transaction: edits
   * in other connections or processes wait on the write lock, so each is judged on the ledger as
   * the ones before it left it.
   */
  async replaceMetadata(
    input: MetadataReplace,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<void, MetadataEditRefusal>> {
    return this.sqlite
      .transaction((): Result<void, MetadataEditRefusal> => {
        const a = this.#statements.asset.get(input.assetId) as { owner_id: string; state: AssetState } | undefined;
        const own = this.#account(input.accountId);
        const payerId = payerIdOf(own);
        this.#expire(payerId, now);
        const payer = this.#account(payerId);
        const plan = decideMetadataReplace(
          {
            assetState: a?.state ?? null,
            metadataSizes: a
              ? (this.#statements.metadataSizes.all(input.assetId) as { size: number }[]).map((r) => r.size)
              : [],
            account: payerId === input.accountId ? payer : own,
            payer,
            storedBlobSize: this.#blob(input.contentHash)?.size ?? null,
          },
          input,
          policy,
          now,
        );
        if (!plan.ok) return plan;
        const { newBlob, reference } = plan.value;
        if (newBlob) this.#storeBlob(newBlob.contentHash, newBlob.size, newBlob.chargedTo, null, now);
        this.#statements.dropMetadata.run(input.assetId);
        this.#statements.insertRef.run(input.assetId, reference.kind, reference.contentHash, reference.size);
        this.#statements.ensure.run(plan.value.payerId);
        this.#statements.setHardSince.run(plan.value.hardSince, plan.value.payerId);
        appendSyncChanges(
          this.sqlite,
          a!.owner_id,
          assetChanges(input.assetId, this.#albumOf(input.assetId), a!.state, a!.state),
          now,
        );
        return ok(undefined);
      })
      .immediate();
  }
}

/** A links row as SQLite returns it (snake_case columns), as core's record. */
function linkFromRow(r: Record<string, unknown>): LinkRecord {
  return {
    idHash: r.id_hash as string,
    sealedId: r.sealed_id as string | null,
    ownerId: r.owner_id as string,
    kind: r.kind as LinkRecord['kind'],
    albumId: r.album_id as string | null,
    assetIds: JSON.parse(r.asset_ids as string) as string[],
    wrappedKey: r.wrapped_key as string | null,
    sealKey: r.seal_key as string | null,
    maxBytes: r.max_bytes as number | null,
    acceptedBytes: r.accepted_bytes as number,
    createdAt: r.created_at as number,
    expiresAt: r.expires_at as number | null,
    revokedAt: r.revoked_at as number | null,
  };
}

interface OpeningGroup {
  readonly policy: QuotaPolicy;
  readonly openings: {
    request: NewUpload;
    tokenHash: string | null;
    now: number;
    resolve: (r: Result<UploadSessionRecord, OpenRefusal>) => void;
    reject: (error: unknown) => void;
  }[];
}
