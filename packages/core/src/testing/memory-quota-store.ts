import type { AssetBlob, AssetCatalog, AssetRecord, MetadataReplace } from '../ports/asset-catalog.js';
import type { BlobRecord, FederatedCacheOutcome, QuotaAccountRecord, QuotaLedger, SweepResult, SweptBlob } from '../ports/quota-ledger.js';
import type { CompleteOutcome, CompleteUpload, OpenUploadOutcome, UploadSessionRecord, UploadSessions } from '../ports/upload-sessions.js';
import type { QuotaLimits } from '../quota/machine.js';
import { isInFlight, isOpenState } from '../upload/machine.js';

type Row = { -readonly [K in keyof QuotaAccountRecord]: QuotaAccountRecord[K] };

const zero = (accountId: string): Row => ({ accountId, charged: 0, reserved: 0, limits: null, hardSince: null, suspendedAt: null, sponsorId: null });

/**
 * The in-memory reference implementation of the quota, upload-session and asset ports. Each
 * method runs to completion without awaiting, so it is atomic the way a SQL transaction is.
 */
export class MemoryQuotaStore implements QuotaLedger, UploadSessions, AssetCatalog {
  readonly accounts = new Map<string, Row>();
  readonly blobs = new Map<string, BlobRecord>();
  readonly uploads = new Map<string, UploadSessionRecord>();
  readonly assets = new Map<string, AssetRecord>();
  /** Federated cache references, keyed receiver \n peer \n hash. */
  readonly federated = new Set<string>();

  #row(accountId: string): Row {
    let r = this.accounts.get(accountId);
    if (!r) {
      r = zero(accountId);
      this.accounts.set(accountId, r);
    }
    return r;
  }

  #expire(now: number, payerId: string | null): string[] {
    const out: string[] = [];
    for (const s of this.uploads.values()) {
      if ((payerId === null || s.payerId === payerId) && isOpenState(s.state) && now >= s.expiresAt) {
        this.uploads.set(s.id, { ...s, state: 'Expired' });
        this.#row(s.payerId).reserved -= s.declaredSize;
        out.push(s.id);
      }
    }
    return out;
  }

  #storeBlob(contentHash: string, size: number, chargedTo: string, peer: string | null, now: number): boolean {
    if (this.blobs.has(contentHash)) return false;
    this.blobs.set(contentHash, { contentHash, size, chargedTo, peer, storedAt: now });
    this.#row(chargedTo).charged += size;
    return true;
  }

  // QuotaLedger

  async readLedger(accountId: string, now: number): Promise<QuotaAccountRecord> {
    this.#expire(now, accountId);
    return { ...(this.accounts.get(accountId) ?? zero(accountId)) };
  }
  async settleHardSince(accountId: string, hard: number | null, now: number): Promise<number | null> {
    const r = this.accounts.get(accountId);
    if (!r) return null;
    r.hardSince = hard !== null && r.charged + r.reserved >= hard ? (r.hardSince ?? now) : null;
    return r.hardSince;
  }
  async setLimits(accountId: string, limits: QuotaLimits | null): Promise<void> {
    this.#row(accountId).limits = limits;
  }
  async setSuspended(accountId: string, suspendedAt: number | null): Promise<void> {
    this.#row(accountId).suspendedAt = suspendedAt;
  }
  async setSponsor(accountId: string, sponsorId: string | null): Promise<void> {
    this.#row(accountId).sponsorId = sponsorId;
  }
  async findBlob(contentHash: string): Promise<BlobRecord | null> {
    return this.blobs.get(contentHash) ?? null;
  }
  async listChargedBlobs(accountId: string): Promise<BlobRecord[]> {
    return [...this.blobs.values()].filter((b) => b.chargedTo === accountId).sort((a, b) => a.storedAt - b.storedAt || (a.contentHash < b.contentHash ? -1 : 1));
  }
  async cacheFederated(input: { receiver: string; peer: string; contentHash: string; size: number; budget: number | null }, now: number): Promise<FederatedCacheOutcome> {
    const key = `${input.receiver}\n${input.peer}\n${input.contentHash}`;
    if (this.federated.has(key)) return 'merged';
    if (this.blobs.has(input.contentHash)) {
      this.federated.add(key);
      return 'merged';
    }
    if (input.budget !== null) {
      let fromPeer = 0;
      for (const b of this.blobs.values()) if (b.chargedTo === input.receiver && b.peer === input.peer) fromPeer += b.size;
      if (fromPeer + input.size > input.budget) return 'over_budget';
    }
    this.#storeBlob(input.contentHash, input.size, input.receiver, input.peer, now);
    this.federated.add(key);
    return 'cached';
  }
  async evictFederated(receiver: string, peer: string, contentHash: string): Promise<boolean> {
    return this.federated.delete(`${receiver}\n${peer}\n${contentHash}`);
  }
  async sweep(now: number): Promise<SweepResult> {
    const expiredUploads = this.#expire(now, null);
    for (const a of this.assets.values()) {
      if (a.state === 'pending_drop' && a.dropExpiresAt !== null && now >= a.dropExpiresAt) this.assets.delete(a.id);
    }
    const referenced = new Set<string>();
    for (const a of this.assets.values()) for (const b of a.blobs) referenced.add(b.contentHash);
    for (const key of this.federated) referenced.add(key.split('\n')[2]!);
    const swept: SweptBlob[] = [];
    for (const b of [...this.blobs.values()]) {
      if (referenced.has(b.contentHash)) continue;
      this.blobs.delete(b.contentHash);
      this.#row(b.chargedTo).charged -= b.size;
      swept.push({ contentHash: b.contentHash, size: b.size, chargedTo: b.chargedTo });
    }
    return { swept, expiredUploads };
  }

  // UploadSessions

  async openUpload(session: UploadSessionRecord, hard: number | null, now: number): Promise<OpenUploadOutcome> {
    this.#expire(now, session.payerId);
    const payer = this.accounts.get(session.payerId) ?? zero(session.payerId);
    if (hard !== null && payer.charged + payer.reserved + session.declaredSize > hard) return 'exceeded';
    if (session.contentHash !== null && this.blobs.has(session.contentHash)) {
      this.uploads.set(session.id, { ...session, state: 'Merged' });
      return 'merged';
    }
    this.uploads.set(session.id, { ...session, state: 'Pending' });
    this.#row(session.payerId).reserved += session.declaredSize;
    return 'reserved';
  }
  async findUpload(id: string): Promise<UploadSessionRecord | null> {
    return this.uploads.get(id) ?? null;
  }
  async markUploading(id: string, now: number): Promise<boolean> {
    const s = this.uploads.get(id);
    if (!s || !isInFlight(s, now)) return false;
    this.uploads.set(id, { ...s, state: 'Uploading', receivedSize: null, receivedHash: null });
    return true;
  }
  async markReceived(id: string, received: { size: number; hash: string } | null, now: number): Promise<boolean> {
    const s = this.uploads.get(id);
    if (!s || !isInFlight(s, now)) return false;
    this.uploads.set(id, received ? { ...s, state: 'WaitingForProcessing', receivedSize: received.size, receivedHash: received.hash } : { ...s, state: 'Pending', receivedSize: null, receivedHash: null });
    return true;
  }
  async completeUpload(input: CompleteUpload, now: number): Promise<CompleteOutcome> {
    const s = this.uploads.get(input.uploadId);
    if (!s) return 'not_open';
    const binding = s.state === 'Merged' && s.assetId === null;
    if (!binding && !isInFlight(s, now)) return 'not_open';
    if ('attachTo' in input.asset) {
      const target = this.assets.get(input.asset.attachTo);
      if (!target || target.state === 'pending_drop') return 'asset_missing';
    }
    const existing = this.blobs.get(input.contentHash);
    if (binding && !existing) return 'blob_missing';
    let outcome: CompleteOutcome = 'merged';
    if (!binding) {
      this.#row(s.payerId).reserved -= s.declaredSize;
      if (this.#storeBlob(input.contentHash, input.size, s.payerId, null, now)) outcome = 'completed';
    }
    const blob: AssetBlob = { kind: s.kind, contentHash: input.contentHash, size: this.blobs.get(input.contentHash)!.size };
    let assetId: string;
    if ('attachTo' in input.asset) {
      assetId = input.asset.attachTo;
      const a = this.assets.get(assetId)!;
      this.assets.set(assetId, { ...a, blobs: [...a.blobs, blob] });
    } else {
      const c = input.asset.create;
      assetId = c.id;
      this.assets.set(assetId, {
        id: c.id,
        ownerId: c.ownerId,
        uploaderId: s.uploaderId,
        state: c.dropExpiresAt === null ? 'live' : 'pending_drop',
        createdAt: now,
        trashedAt: null,
        dropExpiresAt: c.dropExpiresAt,
        blobs: [blob],
      });
    }
    this.uploads.set(s.id, { ...s, state: outcome === 'completed' ? 'Completed' : 'Merged', assetId });
    return outcome;
  }
  async cancelUpload(id: string, now: number): Promise<boolean> {
    const s = this.uploads.get(id);
    if (!s || !isInFlight(s, now)) return false;
    this.uploads.set(id, { ...s, state: 'Cancelled' });
    this.#row(s.payerId).reserved -= s.declaredSize;
    return true;
  }
  async countInFlightUploads(albumId: string, now: number): Promise<number> {
    let n = 0;
    for (const s of this.uploads.values()) if (s.albumId === albumId && isInFlight(s, now)) n++;
    return n;
  }

  // AssetCatalog

  async findAsset(id: string): Promise<AssetRecord | null> {
    return this.assets.get(id) ?? null;
  }
  async trashAsset(id: string, now: number): Promise<boolean> {
    const a = this.assets.get(id);
    if (!a || a.state !== 'live') return false;
    this.assets.set(id, { ...a, state: 'trashed', trashedAt: now });
    return true;
  }
  async restoreAsset(id: string): Promise<boolean> {
    const a = this.assets.get(id);
    if (!a || a.state !== 'trashed') return false;
    this.assets.set(id, { ...a, state: 'live', trashedAt: null });
    return true;
  }
  async purgeAsset(id: string): Promise<boolean> {
    const a = this.assets.get(id);
    if (!a || a.state === 'live') return false;
    return this.assets.delete(id);
  }
  async emptyTrash(ownerId: string): Promise<number> {
    let n = 0;
    for (const a of [...this.assets.values()]) {
      if (a.ownerId === ownerId && a.state === 'trashed') {
        this.assets.delete(a.id);
        n++;
      }
    }
    return n;
  }
  async adoptDrop(id: string, now: number): Promise<boolean> {
    const a = this.assets.get(id);
    if (!a || a.state !== 'pending_drop' || (a.dropExpiresAt !== null && now >= a.dropExpiresAt)) return false;
    this.assets.set(id, { ...a, state: 'live', dropExpiresAt: null });
    return true;
  }
  async replaceMetadata(input: MetadataReplace, now: number): Promise<'replaced' | 'not_live'> {
    const a = this.assets.get(input.assetId);
    if (!a || a.state !== 'live') return 'not_live';
    this.#storeBlob(input.contentHash, input.size, input.payerId, null, now);
    const size = this.blobs.get(input.contentHash)!.size;
    this.assets.set(a.id, { ...a, blobs: [...a.blobs.filter((b) => b.kind !== 'metadata'), { kind: 'metadata', contentHash: input.contentHash, size }] });
    return 'replaced';
  }
}
