import { mayActForAccount, mayReach, type AccessAction } from '../access/rules.js';
import { uuidv7 } from '../encoding/uuid.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { BlobStore } from '../ports/blob-store.js';
import type { Clock } from '../ports/clock.js';
import type { FederatedIntakeRecord, FederatedIntakeStore } from '../ports/federated-intakes.js';
import type { QuotaLedger } from '../ports/quota-ledger.js';
import type { Random } from '../ports/random.js';
import type { WriteGuard, WriteRefusal } from '../ports/write-guard.js';
import { admitWrite, federatedBudget, quotaStatus } from '../quota/machine.js';
import type { QuotaService } from '../quota/service.js';
import type { Principal } from '../session/service.js';
import { isContentHash, isOpenState, uploadState } from '../upload/machine.js';
import type { UploadView } from '../upload/service.js';
import { cachedFromPeer } from './rules.js';

export interface FederatedCacheServiceDeps {
  readonly intakes: FederatedIntakeStore;
  readonly ledger: QuotaLedger;
  readonly quota: QuotaService;
  readonly blobs: BlobStore;
  readonly writeGuard: WriteGuard;
  readonly clock: Clock;
  readonly random: Random;
  readonly ttlMs: number;
}

export interface OpenFederated {
  readonly peer: string;
  readonly declaredSize: number;
  readonly contentHash: string;
  readonly deviceId: string;
  readonly protocolVersion: string;
}

type Caller = Pick<Principal, 'accountId' | 'actingOwnerId' | 'guestUploadId'>;
type Missing = 'error.not_found';
type Conflict = 'error.conflict';
const STORE = 'error.store.unavailable' as const;

function view(i: FederatedIntakeRecord, now: number): UploadView {
  return { uploadId: i.id, state: uploadState(i, now), expiresAt: i.expiresAt, kind: 'original', declaredSize: i.declaredSize, assetId: null };
}

/**
 * Blobs received from federated peers, cached for the receiver (rule 8.3 and the federated budget):
 * charged to the receiver's payer, deduplicated by content hash, and within the per-(receiver,
 * peer) budget. The budget is held twice over: an open fill reserves its declared size against the
 * room left (atomically, in the intake store), and the final charge checks the cache again
 * (atomically, in the ledger) before the reservation is let go.
 */
export class FederatedCacheService {
  readonly #d: FederatedCacheServiceDeps;
  constructor(deps: FederatedCacheServiceDeps) {
    this.#d = deps;
  }

  async open(caller: Caller, input: OpenFederated): Promise<Result<UploadView, WriteRefusal | 'error.quota.federated_budget' | 'error.quota.exceeded' | 'error.quota.write_refused' | 'error.request.invalid' | 'error.not_found'>> {
    // Guests cannot open federated fills: a drop's token reaches its one drop (access/rules.ts).
    if (!mayActForAccount(caller)) return refuse('error.not_found', 'No such account to cache for.');
    if (!Number.isSafeInteger(input.declaredSize) || input.declaredSize < 1) return refuse('error.request.invalid', 'declared_size must be a whole number from 1 to 2^53-1.');
    if (!isContentHash(input.contentHash)) return refuse('error.request.invalid', 'content_hash must be 64 lowercase hex characters.');
    const now = this.#d.clock.now();
    const allowed = await this.#d.writeGuard.checkWrite(
      { accountId: caller.accountId, deviceAccountId: caller.actingOwnerId, deviceId: input.deviceId, albumId: null, intentId: null, protocolVersion: input.protocolVersion },
      now,
    );
    if (!allowed.ok) return allowed;
    const { payerId, facts } = await this.#d.quota.payerFacts(caller.accountId, now);
    const budget = federatedBudget(facts.limits, this.#d.quota.policy);
    const base = { id: uuidv7(now, this.#d.random.bytes(10)), uploaderId: caller.accountId, receiverId: payerId, peer: input.peer, declaredSize: input.declaredSize, contentHash: input.contentHash, receivedSize: null, createdAt: now, expiresAt: now + this.#d.ttlMs };
    if ((await guard(STORE, 'quota ledger read', () => this.#d.ledger.findBlob(input.contentHash))) !== null) {
      // Stored already (by anyone): a merge, charged to nobody; the receiver's reference is recorded.
      await guard(STORE, 'quota ledger write', () => this.#d.ledger.cacheFederated({ receiver: payerId, peer: input.peer, contentHash: input.contentHash, size: input.declaredSize }, this.#d.quota.policy, now));
      const merged: FederatedIntakeRecord = { ...base, state: 'Merged' };
      await guard(STORE, 'intake write', () => this.#d.intakes.openIntake(merged, null, now));
      return ok(view(merged, now));
    }
    const verdict = admitWrite(quotaStatus(facts, now, this.#d.quota.policy.graceMs), 'upload', input.declaredSize);
    if (!verdict.ok) return verdict;
    const cached = cachedFromPeer(await guard(STORE, 'quota ledger read', () => this.#d.ledger.listChargedBlobs(payerId)), input.peer);
    const room = budget === null ? null : budget - cached;
    const intake: FederatedIntakeRecord = { ...base, state: 'Pending' };
    const outcome = room !== null && room < input.declaredSize ? 'over_budget' : await guard(STORE, 'intake write', () => this.#d.intakes.openIntake(intake, room, now));
    if (outcome === 'over_budget') {
      return refuse('error.quota.federated_budget', 'This blob would pass the federated cache budget for its source peer.', { source_peer: input.peer, budget, cached });
    }
    return ok(view(intake, now));
  }

  /** The fill if the caller may do `action` on it (access/rules.ts: never a guest), else null. */
  async #reach(caller: Caller, id: string, action: AccessAction): Promise<FederatedIntakeRecord | null> {
    const i = await guard(STORE, 'intake read', () => this.#d.intakes.findIntake(id));
    return i !== null && mayReach(caller, { kind: 'federated_fill', id: i.id, accountId: i.uploaderId }, action) ? i : null;
  }

  async get(caller: Caller, id: string): Promise<Result<UploadView, Missing>> {
    const i = await this.#reach(caller, id, 'read');
    return i ? ok(view(i, this.#d.clock.now())) : refuse('error.not_found', 'No such upload session.');
  }

  async put(caller: Caller, id: string, body: AsyncIterable<Uint8Array>): Promise<Result<UploadView, Missing | Conflict | 'error.upload.too_large'>> {
    const i = await this.#reach(caller, id, 'write');
    if (!i) return refuse('error.not_found', 'No such upload session.');
    const now = this.#d.clock.now();
    if (!isOpenState(uploadState(i, now))) return refuse('error.conflict', `The upload session is ${uploadState(i, now)}.`);
    const staged = await this.#d.blobs.stage(id, body, i.declaredSize);
    if (staged === null) return refuse('error.upload.too_large', `The upload declared ${i.declaredSize} bytes; more were sent and nothing was kept.`, { declared_size: i.declaredSize });
    if (staged.sha256 !== i.contentHash) {
      await this.#d.blobs.discard(id);
      return refuse('error.conflict', 'The bytes do not hash to the content_hash announced at creation.');
    }
    if (!(await guard(STORE, 'intake write', () => this.#d.intakes.markReceived(id, staged.size, this.#d.clock.now())))) {
      await this.#d.blobs.discard(id);
      return refuse('error.conflict', 'The upload session closed while the bytes were arriving.');
    }
    return ok(view({ ...i, state: 'WaitingForProcessing', receivedSize: staged.size }, now));
  }

  /** Commits the bytes and charges the cache; the reservation goes only after the charge is in. */
  async finalize(caller: Caller, id: string, contentHash: string): Promise<Result<UploadView, Missing | Conflict | 'error.quota.federated_budget'>> {
    const i = await this.#reach(caller, id, 'write');
    if (!i) return refuse('error.not_found', 'No such upload session.');
    const now = this.#d.clock.now();
    // Merged at creation (nothing was sent): finalize only confirms it.
    if (i.state === 'Merged' && i.receivedSize === null && contentHash === i.contentHash) return ok(view(i, now));
    const state = uploadState(i, now);
    if (state !== 'WaitingForProcessing' || i.receivedSize === null) return refuse('error.conflict', state === 'Pending' ? 'No bytes have been received for this upload yet.' : `The upload session is ${state}.`, { state });
    if (contentHash !== i.contentHash) return refuse('error.conflict', 'The content hash does not match the bytes received.');
    const committed = await this.#d.blobs.commit(id, contentHash);
    if (committed !== 'stored') return refuse('error.conflict', `The received bytes could not be committed (${committed}).`);
    // The store re-checks the per-peer budget atomically (core's decideFederatedCache) as it charges.
    const outcome = await guard(STORE, 'quota ledger write', () =>
      this.#d.ledger.cacheFederated({ receiver: i.receiverId, peer: i.peer, contentHash, size: i.receivedSize! }, this.#d.quota.policy, now),
    );
    const final = outcome === 'over_budget' ? 'Cancelled' : outcome === 'cached' ? 'Completed' : 'Merged';
    await guard(STORE, 'intake write', () => this.#d.intakes.closeIntake(id, final));
    if (outcome === 'over_budget') {
      if ((await this.#d.ledger.findBlob(contentHash)) === null) await this.#d.blobs.remove(contentHash);
      return refuse('error.quota.federated_budget', 'The federated cache budget for this peer is spent.', { source_peer: i.peer });
    }
    return ok(view({ ...i, state: final }, now));
  }

  /** Part of the GC sweep: expired fills let their staged bytes go. Returns how many expired. */
  async sweep(): Promise<number> {
    const expired = await guard(STORE, 'intake write', () => this.#d.intakes.expireIntakes(this.#d.clock.now()));
    for (const id of expired) await this.#d.blobs.discard(id);
    return expired.length;
  }

  async cancel(caller: Caller, id: string): Promise<Result<UploadView, Missing | Conflict>> {
    const i = await this.#reach(caller, id, 'write');
    if (!i) return refuse('error.not_found', 'No such upload session.');
    const now = this.#d.clock.now();
    if (!isOpenState(uploadState(i, now)) || !(await guard(STORE, 'intake write', () => this.#d.intakes.closeIntake(id, 'Cancelled')))) {
      return refuse('error.conflict', `The upload session is ${uploadState(i, now)}.`);
    }
    await this.#d.blobs.discard(id);
    return ok(view({ ...i, state: 'Cancelled' }, now));
  }
}
