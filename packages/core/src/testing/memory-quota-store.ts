import { ok, type Result } from '../errors.js';
import type {
  AssetBlob,
  AssetCatalog,
  AssetRecord,
  BlobReference,
  MetadataReplace,
  TrashedAsset,
} from '../ports/asset-catalog.js';
import type { BlobRecord, QuotaAccountRecord, QuotaLedger, SweepResult, SweptBlob } from '../ports/quota-ledger.js';
import type {
  CompleteOutcome,
  CompleteUpload,
  NewUpload,
  OpenRefusal,
  UploadSessionRecord,
  UploadSessions,
} from '../ports/upload-sessions.js';
import { emptyLedgerRecord, payerIdOf, settledHardSince } from '../quota/ledger-rules.js';
import type { QuotaLimits, QuotaPolicy } from '../quota/machine.js';
import { decideAssetTransition, EMPTY_TRASH_CANDIDATE_STATES, type AssetAction } from '../assets/lifecycle.js';
import { decideMetadataReplace, type MetadataEditRefusal } from '../assets/metadata-edit.js';
import { decideCompletion, decideOpen, type OpenFacts } from '../upload/decisions.js';
import type { MemoryLinkStore } from './memory-sharing.js';
import type { MemorySyncLog } from './memory-sync.js';
import { assetChanges, linkChanges } from '../sync/changes.js';
import { isInFlight, UPLOAD_LAPSED } from '../upload/machine.js';
import { holds } from '../filters/filter.js';
import { DROP_LAPSED } from '../assets/lifecycle.js';

type Row = { -readonly [K in keyof QuotaAccountRecord]: QuotaAccountRecord[K] };

const zero = (accountId: string): Row => ({ ...emptyLedgerRecord(accountId) });

/**
 * The in-memory reference implementation of the quota, upload-session and asset ports. Each
 * method runs to completion without awaiting, so it is atomic the way a SQL transaction is.
 */
export class MemoryQuotaStore implements QuotaLedger, UploadSessions, AssetCatalog {
  /** The link store drops and revocations write to in the same step (one transaction, as a SQL store does). */
  constructor(readonly links: MemoryLinkStore | null = null) {}
  readonly accounts = new Map<string, Row>();
  readonly blobs = new Map<string, BlobRecord>();
  readonly uploads = new Map<string, UploadSessionRecord>();
  readonly assets = new Map<string, AssetRecord>();
  /** Federated cache references, keyed receiver \n peer \n hash. */
  readonly federated = new Set<string>();
  /** The sync log each write appends its changes to in the same step (createMemoryPorts wires it). */
  sync: MemorySyncLog | null = null;

  #row(accountId: string): Row {
    let r = this.accounts.get(accountId);
    if (!r) {
      r = zero(accountId);
      this.accounts.set(accountId, r);
    }
    return r;
  }

  #expire(now: number, payerId: string | null, moved?: Set<string>): string[] {
    const out: string[] = [];
    for (const s of this.uploads.values()) {
      if ((payerId === null || s.payerId === payerId) && holds(UPLOAD_LAPSED, s, { now })) {
        this.uploads.set(s.id, { ...s, state: 'Expired' });
        this.#row(s.payerId).reserved -= s.declaredSize;
        moved?.add(s.payerId);
        out.push(s.id);
      }
    }
    return out;
  }

  #settle(accountId: string, policy: QuotaPolicy, now: number): number | null {
    const r = this.accounts.get(accountId);
    if (!r) return null;
    r.hardSince = settledHardSince(r, policy, now);
    return r.hardSince;
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
  async settleHardSince(accountId: string, policy: QuotaPolicy, now: number): Promise<number | null> {
    return this.#settle(accountId, policy, now);
  }
  async setLimits(accountId: string, limits: QuotaLimits | null): Promise<void> {
    this.#row(accountId).limits = limits;
  }
  async setSuspended(accountId: string, suspendedAt: number | null): Promise<void> {
    this.#row(accountId).suspendedAt = suspendedAt;
  }
  /** Who pays for the account, written by the sponsorship store (which decides it) in the same step. */
  sponsorRow(accountId: string, sponsorId: string | null): void {
    this.#row(accountId).sponsorId = sponsorId;
  }
  async findBlob(contentHash: string): Promise<BlobRecord | null> {
    return this.blobs.get(contentHash) ?? null;
  }
  async listBlobs(after: string | null, limit: number): Promise<BlobRecord[]> {
    return [...this.blobs.values()]
      .filter((b) => after === null || b.contentHash > after)
      .sort((a, b) => (a.contentHash < b.contentHash ? -1 : 1))
      .slice(0, limit);
  }
  async listChargedBlobs(accountId: string): Promise<BlobRecord[]> {
    return [...this.blobs.values()]
      .filter((b) => b.chargedTo === accountId)
      .sort((a, b) => a.storedAt - b.storedAt || (a.contentHash < b.contentHash ? -1 : 1));
  }
  async evictFederated(receiver: string, peer: string, contentHash: string): Promise<boolean> {
    return this.federated.delete(`${receiver}\n${peer}\n${contentHash}`);
  }
  async sweep(policy: QuotaPolicy, now: number): Promise<SweepResult> {
    const moved = new Set<string>();
    const expiredUploads = this.#expire(now, null, moved);
    for (const a of this.assets.values()) {
      if (holds(DROP_LAPSED, a, { now })) this.assets.delete(a.id);
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
      moved.add(b.chargedTo);
    }
    for (const accountId of moved) this.#settle(accountId, policy, now);
    return { swept, expiredUploads };
  }

  // UploadSessions

  /** The facts `decideOpen` reads for one opening, after the payer's lapsed sessions expired. */
  #openFacts(request: NewUpload, now: number): OpenFacts {
    const uploader = this.accounts.get(request.uploaderId) ?? zero(request.uploaderId);
    const payerId = payerIdOf(uploader);
    this.#expire(now, payerId);
    const payer = this.accounts.get(payerId) ?? zero(payerId);
    let openSessions = 0;
    let fromPeer = 0;
    for (const s of this.uploads.values()) {
      if (s.payerId !== payerId || !isInFlight(s, now)) continue;
      openSessions++;
      if (request.sourcePeer !== null && s.sourcePeer === request.sourcePeer) fromPeer += s.declaredSize;
    }
    if (request.sourcePeer !== null)
      for (const b of this.blobs.values())
        if (b.chargedTo === payerId && b.peer === request.sourcePeer) fromPeer += b.size;
    const link = request.dropLinkIdHash === null ? null : (this.links?.links.get(request.dropLinkIdHash) ?? null);
    return { uploader, payer, openSessions, fromPeer, link };
  }

  #applyOpen(request: NewUpload, policy: QuotaPolicy, now: number): Result<UploadSessionRecord, OpenRefusal> {
    // As a primary key would: a second session under one id is an error, and nothing changes.
    if (this.uploads.has(request.id)) throw new Error(`upload session ${request.id} exists already`);
    const plan = decideOpen(this.#openFacts(request, now), request, policy, now);
    if (!plan.ok) return plan;
    const session = plan.value.session;
    this.uploads.set(session.id, session);
    const row = this.#row(session.payerId);
    row.reserved += plan.value.reserve;
    row.hardSince = plan.value.hardSince;
    if (plan.value.linkAccepts > 0 && session.dropLinkIdHash !== null) {
      const l = this.links!.links.get(session.dropLinkIdHash)!;
      this.links!.links.set(l.idHash, { ...l, acceptedBytes: l.acceptedBytes + plan.value.linkAccepts });
    }
    return ok(session);
  }

  async openUpload(
    request: NewUpload,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<UploadSessionRecord, OpenRefusal>> {
    return this.#applyOpen(request, policy, now);
  }
  async openDrop(
    request: NewUpload & { readonly dropLinkIdHash: string },
    tokenHash: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<UploadSessionRecord, OpenRefusal>> {
    if (!this.links) throw new Error('MemoryQuotaStore: drops need the link store');
    const opened = this.#applyOpen(request, policy, now);
    if (!opened.ok) return opened;
    this.links.drops.set(request.id, {
      uploadId: request.id,
      linkIdHash: request.dropLinkIdHash,
      ownerId: request.uploaderId,
      tokenHash,
      declaredSize: request.declaredSize,
      createdAt: now,
    });
    return opened;
  }
  async revokeLink(
    ownerId: string,
    linkIdHash: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<{ revoked: boolean; cancelled: string[] }> {
    const l = this.links?.links.get(linkIdHash);
    if (!l || l.ownerId !== ownerId || l.revokedAt !== null) return { revoked: false, cancelled: [] };
    this.links!.links.set(linkIdHash, { ...l, revokedAt: now });
    this.sync?.append(ownerId, linkChanges(linkIdHash, true), now);
    const cancelled: string[] = [];
    const moved = new Set<string>();
    for (const s of [...this.uploads.values()]) {
      if (s.dropLinkIdHash !== linkIdHash || !isInFlight(s, now)) continue;
      this.uploads.set(s.id, { ...s, state: 'Cancelled' });
      this.#row(s.payerId).reserved -= s.declaredSize;
      moved.add(s.payerId);
      cancelled.push(s.id);
    }
    for (const id of moved) this.#settle(id, policy, now);
    return { revoked: true, cancelled };
  }
  async rekeyLink(clearId: string, to: { idHash: string; sealedId: string }): Promise<boolean> {
    const l = this.links?.links.get(clearId);
    if (!l || l.sealedId !== null) return false;
    this.links!.links.delete(clearId);
    this.links!.links.set(to.idHash, { ...l, idHash: to.idHash, sealedId: to.sealedId });
    for (const [id, d] of this.links!.drops)
      if (d.linkIdHash === clearId) this.links!.drops.set(id, { ...d, linkIdHash: to.idHash });
    for (const [id, s] of this.uploads)
      if (s.dropLinkIdHash === clearId) this.uploads.set(id, { ...s, dropLinkIdHash: to.idHash });
    this.sync?.rekeyLink(clearId, to.idHash);
    return true;
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
    this.uploads.set(
      id,
      received
        ? { ...s, state: 'WaitingForProcessing', receivedSize: received.size, receivedHash: received.hash }
        : { ...s, state: 'Pending', receivedSize: null, receivedHash: null },
    );
    return true;
  }
  async completeUpload(input: CompleteUpload, policy: QuotaPolicy, now: number): Promise<CompleteOutcome> {
    const session = this.uploads.get(input.uploadId) ?? null;
    const target =
      input.asset !== null && 'attachTo' in input.asset ? this.assets.get(input.asset.attachTo) : undefined;
    const plan = decideCompletion(
      {
        session,
        storedBlobSize: this.blobs.get(input.contentHash)?.size ?? null,
        attachTarget: target?.state ?? null,
        payer: session ? (this.accounts.get(session.payerId) ?? null) : null,
      },
      input,
      policy,
      now,
    );
    if (typeof plan === 'string') return plan;
    const payer = this.#row(plan.session.payerId);
    payer.reserved -= plan.release;
    if (plan.newBlob)
      this.#storeBlob(plan.newBlob.contentHash, plan.newBlob.size, plan.newBlob.chargedTo, plan.newBlob.peer, now);
    payer.hardSince = plan.hardSince;
    if (plan.federatedRef)
      this.federated.add(`${plan.federatedRef.receiver}\n${plan.federatedRef.peer}\n${plan.federatedRef.contentHash}`);
    const blob: AssetBlob | null = plan.reference;
    if (blob !== null && plan.assetId !== null) {
      if (plan.createAsset) {
        this.assets.set(plan.assetId, { ...plan.createAsset, createdAt: now, trashedAt: null, blobs: [blob] });
        this.sync?.append(
          plan.createAsset.ownerId,
          assetChanges(plan.assetId, this.#albumOf(plan.assetId, plan.session), null, plan.createAsset.state),
          now,
        );
      } else {
        const a = this.assets.get(plan.assetId)!;
        this.assets.set(plan.assetId, { ...a, blobs: [...a.blobs, blob] });
        this.sync?.append(a.ownerId, assetChanges(a.id, this.#albumOf(a.id), a.state, a.state), now);
      }
    }
    this.uploads.set(plan.session.id, plan.session);
    return { outcome: plan.outcome, session: plan.session };
  }
  async cancelUpload(id: string, policy: QuotaPolicy, now: number): Promise<boolean> {
    const s = this.uploads.get(id);
    if (!s || !isInFlight(s, now)) return false;
    this.uploads.set(id, { ...s, state: 'Cancelled' });
    this.#row(s.payerId).reserved -= s.declaredSize;
    this.#settle(s.payerId, policy, now);
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
  async blobReferences(contentHash: string, ownerId: string): Promise<BlobReference[]> {
    const out: BlobReference[] = [];
    for (const a of this.assets.values()) {
      if (a.ownerId !== ownerId || !a.blobs.some((b) => b.contentHash === contentHash)) continue;
      out.push({ assetId: a.id, ownerId: a.ownerId, state: a.state, albumId: this.uploads.get(a.id)?.albumId ?? null });
    }
    return out.sort((x, y) => (x.assetId < y.assetId ? -1 : x.assetId > y.assetId ? 1 : 0));
  }
  // The lifecycle is core's (decideAssetTransition); this fake reads, asks, and writes, as the stores do.
  #transition(id: string, action: AssetAction, now: number): boolean {
    const a = this.assets.get(id) ?? null;
    const t = decideAssetTransition(a, action);
    if (!t.ok || !a) return false;
    if (t.write === 'delete') this.assets.delete(id);
    else this.assets.set(id, { ...a, ...t.next });
    this.sync?.append(
      a.ownerId,
      assetChanges(id, this.#albumOf(id), a.state, t.write === 'delete' ? null : t.next.state),
      now,
    );
    return true;
  }
  /** The album an asset lies in: its original's upload session's (albums/asset-album.ts). */
  #albumOf(assetId: string, session?: UploadSessionRecord): string | null {
    return (session?.id === assetId ? session : this.uploads.get(assetId))?.albumId ?? null;
  }
  /** A trash, restore or purge, and (when it applied) the owner's trash activity stamped with it. */
  #trashActivity(id: string, action: AssetAction, now: number): boolean {
    const ownerId = this.assets.get(id)?.ownerId;
    if (ownerId === undefined || !this.#transition(id, action, now)) return false;
    this.#row(ownerId).trashActivityAt = now;
    return true;
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
    return [...this.assets.values()]
      .filter((a) => a.ownerId === ownerId && EMPTY_TRASH_CANDIDATE_STATES.includes(a.state))
      .sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))
      .map((a) => ({ assetId: a.id, albumId: this.uploads.get(a.id)?.albumId ?? null }));
  }
  async emptyTrash(ownerId: string, assetIds: readonly string[], now: number): Promise<number> {
    let n = 0;
    for (const id of new Set(assetIds))
      if (this.assets.get(id)?.ownerId === ownerId && this.#transition(id, { kind: 'empty_trash' }, now)) n++;
    if (n > 0) this.#row(ownerId).trashActivityAt = now;
    return n;
  }
  async adoptDrop(id: string, now: number): Promise<boolean> {
    return this.#transition(id, { kind: 'adopt', now }, now);
  }
  async discardDrop(id: string): Promise<boolean> {
    // A pending drop was never synced: its discard records nothing (core's assetChanges), so no instant is needed.
    return this.#transition(id, { kind: 'discard' }, 0);
  }
  async replaceMetadata(
    input: MetadataReplace,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<void, MetadataEditRefusal>> {
    const a = this.assets.get(input.assetId) ?? null;
    const account = this.accounts.get(input.accountId) ?? zero(input.accountId);
    const payerId = payerIdOf(account);
    this.#expire(now, payerId);
    const plan = decideMetadataReplace(
      {
        assetState: a?.state ?? null,
        metadataSizes: (a?.blobs ?? []).filter((b) => b.kind === 'metadata').map((b) => b.size),
        account,
        payer: this.accounts.get(payerId) ?? zero(payerId),
        storedBlobSize: this.blobs.get(input.contentHash)?.size ?? null,
      },
      input,
      policy,
      now,
    );
    if (!plan.ok) return plan;
    const { newBlob, reference } = plan.value;
    if (newBlob) this.#storeBlob(newBlob.contentHash, newBlob.size, newBlob.chargedTo, null, now);
    this.assets.set(a!.id, { ...a!, blobs: [...a!.blobs.filter((b) => b.kind !== 'metadata'), reference] });
    this.sync?.append(a!.ownerId, assetChanges(a!.id, this.#albumOf(a!.id), a!.state, a!.state), now);
    this.#row(plan.value.payerId).hardSince = plan.value.hardSince;
    return ok(undefined);
  }
}
