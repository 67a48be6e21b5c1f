import { collectBlob, ledgerHolds, releaseStaging, settleAllQuarantined, type LedgerHolds } from '../blobs/handoff.js';
import { verifyBlobs } from '../blobs/verify.js';
import { storeWholeBytes } from '../blobs/store-bytes.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { BlobStore } from '../ports/blob-store.js';
import type { Clock } from '../ports/clock.js';
import type { BlobRecord, QuotaAccountRecord, QuotaLedger, SweptBlob } from '../ports/quota-ledger.js';
import type { Random } from '../ports/random.js';
import { ledgerFacts, settledHardSince } from './ledger-rules.js';
import {
  admitWrite,
  quotaStatus,
  type LedgerFacts,
  type QuotaLimits,
  type QuotaPolicy,
  type QuotaRefusal,
  type QuotaStatus,
  type WriteKind,
} from './machine.js';

export interface QuotaServiceDeps {
  readonly ledger: QuotaLedger;
  readonly blobs: BlobStore;
  readonly clock: Clock;
  readonly random: Random;
  readonly policy: QuotaPolicy;
}

/** What an operator sees for one account. */
export interface LedgerReport {
  readonly accountId: string;
  readonly payerId: string;
  readonly record: QuotaAccountRecord;
  readonly status: QuotaStatus;
  readonly blobs: readonly BlobRecord[];
}

export interface SweepReport {
  readonly swept: readonly SweptBlob[];
  readonly credited: Readonly<Record<string, number>>;
  readonly expiredUploads: number;
  /**
   * Objects at a content address that no ledger row named, removed (through quarantine, as the
   * sweep's own): what a sweep stopped between its ledger write and its collection left.
   */
  readonly unrecorded: number;
}

const STORE = 'error.store.unavailable' as const;

/**
 * Quota accounting over the ledger: derived state, admission of writes, the sweep, federated
 * caching and the operator's levers. Reads the clock once per operation.
 */
export class QuotaService {
  readonly #d: QuotaServiceDeps;
  constructor(deps: QuotaServiceDeps) {
    this.#d = deps;
    this.holds = ledgerHolds(deps.ledger);
  }

  get policy(): QuotaPolicy {
    return this.#d.policy;
  }

  /** Whom the ledger charges for this account's writes: its sponsor if it has one, else itself. */
  async payerOf(accountId: string, now = this.#d.clock.now()): Promise<string> {
    return (await this.payerFacts(accountId, now)).payerId;
  }

  /**
   * Who pays for the account's writes, and that payer's facts; `own` is the account's own row (what
   * it did itself, such as its last trash activity). An account that pays for itself (the common
   * case) is read once, not twice.
   */
  async payerFacts(
    accountId: string,
    now: number,
  ): Promise<{ payerId: string; own: QuotaAccountRecord; record: QuotaAccountRecord; facts: LedgerFacts }> {
    const own = await guard(STORE, 'quota ledger read', () => this.#d.ledger.readLedger(accountId, now));
    const payerId = own.sponsorId ?? accountId;
    return { payerId, own, ...(await this.facts(payerId, now, payerId === accountId ? own : undefined)) };
  }

  /** The payer's facts as of `now`, with hard_since brought in line with the ledger first. */
  async facts(
    payerId: string,
    now: number,
    known?: QuotaAccountRecord,
  ): Promise<{ record: QuotaAccountRecord; facts: LedgerFacts }> {
    let record = known ?? (await guard(STORE, 'quota ledger read', () => this.#d.ledger.readLedger(payerId, now)));
    // Writers settle hard_since in their own transactions; a read settles it only when something
    // else moved the line (an operator's new limits, a changed deployment default).
    if (settledHardSince(record, this.#d.policy, now) !== record.hardSince) {
      const hardSince = await guard(STORE, 'quota ledger write', () =>
        this.#d.ledger.settleHardSince(payerId, this.#d.policy, now),
      );
      record = { ...record, hardSince };
    }
    return { record, facts: ledgerFacts(record, this.#d.policy) };
  }

  /** The caller's quota (a sponsored account sees its sponsor's, which is the one it spends). */
  async status(accountId: string): Promise<QuotaStatus> {
    const now = this.#d.clock.now();
    return quotaStatus((await this.payerFacts(accountId, now)).facts, now, this.#d.policy.graceMs);
  }

  /**
   * Whether the payer's current state admits a write of this kind and size delta by the account: a
   * read, for writes that charge no bytes (a new link). Upload sessions are admitted by the store's
   * transaction (upload/decisions.ts), and so are metadata edits (assets/metadata-edit.ts), not here.
   */
  async admit(
    accountId: string,
    kind: Exclude<WriteKind, 'upload' | 'metadata_update'>,
    delta: number,
  ): Promise<Result<QuotaStatus, QuotaRefusal>> {
    const now = this.#d.clock.now();
    const { own, facts } = await this.payerFacts(accountId, now);
    const status = quotaStatus(facts, now, this.#d.policy.graceMs);
    const verdict = admitWrite(
      status,
      { kind, delta, uploadKind: null, trashActivityAt: own.trashActivityAt },
      this.#d.policy,
      now,
    );
    return verdict.ok ? ok(status) : verdict;
  }

  /** Re-derives hard_since after the payer's ledger moved. */
  async settle(payerId: string, now = this.#d.clock.now()): Promise<void> {
    await this.facts(payerId, now);
  }

  // Operator levers

  /** Sets the account's own limits (null restores the deployment defaults). */
  async setLimits(
    accountId: string,
    limits: QuotaLimits | null,
  ): Promise<Result<QuotaStatus, 'error.request.invalid'>> {
    if (limits !== null && limits.soft !== null && limits.hard !== null && limits.soft > limits.hard) {
      return refuse('error.request.invalid', 'The soft limit must not exceed the hard limit.');
    }
    const own = await this.#ownQuota(accountId);
    if (!own.ok) return own;
    await guard(STORE, 'quota ledger write', () => this.#d.ledger.setLimits(accountId, limits));
    return ok(await this.status(accountId));
  }

  async suspend(accountId: string): Promise<Result<QuotaStatus, 'error.request.invalid'>> {
    const own = await this.#ownQuota(accountId);
    if (!own.ok) return own;
    const now = this.#d.clock.now();
    await guard(STORE, 'quota ledger write', () => this.#d.ledger.setSuspended(accountId, now));
    return ok(await this.status(accountId));
  }

  /**
   * The operator's levers act on the quota that decides: a sponsored account's uploads are judged
   * on its sponsor's row (spec §8.4), so limits or a suspension set on its own row would say they took
   * effect and change nothing.
   */
  async #ownQuota(accountId: string): Promise<Result<void, 'error.request.invalid'>> {
    const record = await guard(STORE, 'quota ledger read', () =>
      this.#d.ledger.readLedger(accountId, this.#d.clock.now()),
    );
    if (record.sponsorId !== null)
      return refuse(
        'error.request.invalid',
        `A sponsored account has no quota of its own: its sponsor's (${record.sponsorId}) applies; set that one.`,
      );
    return ok(undefined);
  }

  async unsuspend(accountId: string): Promise<QuotaStatus> {
    await guard(STORE, 'quota ledger write', () => this.#d.ledger.setSuspended(accountId, null));
    return this.status(accountId);
  }

  async report(accountId: string): Promise<LedgerReport> {
    const now = this.#d.clock.now();
    const payerId = await this.payerOf(accountId, now);
    const { record, facts } = await this.facts(accountId, now);
    const blobs = await guard(STORE, 'quota ledger read', () => this.#d.ledger.listChargedBlobs(accountId));
    return { accountId, payerId, record, status: quotaStatus(facts, now, this.#d.policy.graceMs), blobs };
  }

  /** Whether the ledger has a row for the hash now: what the blob hand-over reads (blobs/handoff.ts). */
  readonly holds: LedgerHolds;

  /**
   * A writer's last step once its ledger write is done (or found done): the blob checked at its
   * address, committed again from staging if a sweep took it meanwhile, then the staging dropped.
   */
  releaseStaging(stagingId: string, contentHash: string): Promise<void> {
    return releaseStaging(this.#d.blobs, this.holds, stagingId, contentHash);
  }

  /**
   * Bytes committed to their address whose ledger write was then refused (a metadata edit the
   * store's decision turned down) go as the sweep's do (blobs/handoff.ts collectBlob): unless the
   * ledger holds a row for the hash (another writer's), through quarantine and a second read of
   * the ledger, so a writer of the same bytes racing this keeps them. Answers whether they went.
   */
  collectUnrecorded(contentHash: string): Promise<boolean> {
    return collectBlob(this.#d.blobs, this.holds, contentHash);
  }

  /**
   * Bytes held whole into the store, with `record` writing the ledger row that names them
   * (blobs/store-bytes.ts).
   */
  storeWholeBytes<T>(
    stagingPrefix: string,
    bytes: Uint8Array,
    record: (contentHash: string) => Promise<T>,
  ): Promise<{ contentHash: string; recorded: T }> {
    return storeWholeBytes(this.#d.blobs, this.#d.random, this.holds, stagingPrefix, bytes, record);
  }

  /**
   * The garbage collection: blobs nothing references any more leave the ledger and their bytes
   * are credited to whoever was charged; then their files go, through quarantine and a second
   * read of the ledger, so a finalize of the same bytes racing the sweep keeps them
   * (blobs/handoff.ts). What a sweep that stopped midway left in quarantine is settled first,
   * and what it left at an address with no ledger row goes last. Expired sessions' staged bytes
   * go too.
   */
  async sweep(): Promise<SweepReport> {
    await settleAllQuarantined(this.#d.blobs, this.holds);
    const now = this.#d.clock.now();
    const result = await guard(STORE, 'quota sweep', () => this.#d.ledger.sweep(this.#d.policy, now));
    const credited: Record<string, number> = {};
    for (const b of result.swept) {
      credited[b.chargedTo] = (credited[b.chargedTo] ?? 0) + b.size;
      await collectBlob(this.#d.blobs, this.holds, b.contentHash);
    }
    for (const id of result.expiredUploads) await this.#d.blobs.discard(id);
    // A sweep stopped after its ledger write and before its collection (kill -9) left bytes at
    // their address whose row is gone and already credited: nobody is charged for them and no
    // later ledger write names them. Every object without a row goes as the sweep's own do; one a
    // finalize committed and has not yet recorded is safe (the writer's check commits it again).
    const listed = await verifyBlobs(
      (after, limit) => guard(STORE, 'quota ledger read', () => this.#d.ledger.listBlobs(after, limit)),
      this.#d.blobs.list(),
    );
    let unrecorded = 0;
    for (const b of listed.unreferenced) if (await collectBlob(this.#d.blobs, this.holds, b.contentHash)) unrecorded++;
    return { swept: result.swept, credited, expiredUploads: result.expiredUploads.length, unrecorded };
  }

  async evictFederated(receiverId: string, peer: string, contentHash: string): Promise<boolean> {
    return guard(STORE, 'quota ledger write', () => this.#d.ledger.evictFederated(receiverId, peer, contentHash));
  }
}
