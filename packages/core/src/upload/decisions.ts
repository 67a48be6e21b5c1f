import { ok, refuse, type Result } from '../errors.js';
import type { AssetState } from '../ports/asset-catalog.js';
import type { QuotaAccountRecord } from '../ports/quota-ledger.js';
import type { CompleteUpload, NewUpload, UploadSessionRecord, UploadState } from '../ports/upload-sessions.js';
import { emptyLedgerRecord, ledgerFacts, payerIdOf, settledHardSince } from '../quota/ledger-rules.js';
import { admitWrite, nextHardSince, quotaStatus, type QuotaPolicy, type QuotaRefusal } from '../quota/machine.js';
import { isInFlight } from './machine.js';

/**
 * The decisions an upload store applies inside its own transaction: it reads the facts, calls one
 * of these, and writes exactly what the plan says. No store repeats a limit, a state or a predicate.
 */

/** What a store reads before opening an upload session (after expiring the payer's timed-out ones). */
export interface OpenFacts {
  /** The uploader's ledger row: names its sponsor, if any. */
  readonly uploader: QuotaAccountRecord;
  /** The paying account's row (the uploader's own row when it pays for itself). */
  readonly payer: QuotaAccountRecord;
  /** Whether a blob with the announced content hash is stored already. */
  readonly blobStored: boolean;
}

/** What to write: the session row, the payer's new reservation total and `hard_since`. */
export interface OpenPlan {
  readonly session: UploadSessionRecord;
  readonly outcome: 'reserved' | 'merged';
  /** Bytes to add to the payer's reservations (0 for a merge). */
  readonly reserve: number;
  readonly hardSince: number | null;
}

/**
 * Opening an upload session, the only hard quota enforcement point: refused while suspended or when
 * used (open reservations included) plus the declared size would pass the hard limit, in which case
 * nothing is written. A content hash already stored is a merge and reserves nothing.
 */
export function decideOpen(facts: OpenFacts, request: NewUpload, policy: QuotaPolicy, now: number): Result<OpenPlan, QuotaRefusal> {
  const payerId = payerIdOf(facts.uploader);
  const settled = { ...facts.payer, hardSince: settledHardSince(facts.payer, policy, now) };
  const lf = ledgerFacts(settled, policy);
  const verdict = admitWrite(quotaStatus(lf, now, policy.graceMs), 'upload', request.declaredSize);
  if (!verdict.ok) return verdict;
  const merged = request.contentHash !== null && facts.blobStored;
  const reserve = merged ? 0 : request.declaredSize;
  const state: UploadState = merged ? 'Merged' : 'Pending';
  return ok({
    session: { ...request, payerId, state, receivedSize: null, receivedHash: null, assetId: null },
    outcome: merged ? 'merged' : 'reserved',
    reserve,
    hardSince: nextHardSince({ ...lf, reserved: lf.reserved + reserve }, now),
  });
}

/** What a store reads once for a group of openings: every row involved, after the expiries. */
export interface GroupOpenFacts {
  /** Ledger rows by account id: each uploader's, and its sponsor's when it has one. */
  readonly accounts: ReadonlyMap<string, QuotaAccountRecord>;
  /** Which announced content hashes are stored already. */
  readonly storedHashes: ReadonlySet<string>;
}

/** The plans of a group, in request order, and each payer's row as the group leaves it. */
export interface GroupOpenPlan {
  readonly decisions: readonly Result<OpenPlan, QuotaRefusal>[];
  /** Per payer that reserved anything: bytes to add to its reservations, and its new `hard_since`. */
  readonly payers: ReadonlyMap<string, { readonly reserve: number; readonly hardSince: number | null }>;
}

/**
 * `decideOpen` for several openings at once, as if each ran in its own transaction right after
 * the one before it: every decision sees the reservations the earlier ones made. Lets a store
 * read all the facts of a group once and write all the plans once (one transaction, a handful of
 * statements) with exactly the outcomes one-at-a-time openings in this order would have had.
 */
export function decideOpenGroup(facts: GroupOpenFacts, requests: readonly { readonly request: NewUpload; readonly now: number }[], policy: QuotaPolicy): GroupOpenPlan {
  const rows = new Map(facts.accounts);
  const row = (id: string) => rows.get(id) ?? emptyLedgerRecord(id);
  const payers = new Map<string, { reserve: number; hardSince: number | null }>();
  const decisions = requests.map(({ request, now }) => {
    const uploader = row(request.uploaderId);
    const payer = row(payerIdOf(uploader));
    const blobStored = request.contentHash !== null && facts.storedHashes.has(request.contentHash);
    const plan = decideOpen({ uploader, payer, blobStored }, request, policy, now);
    if (plan.ok) {
      rows.set(payer.accountId, { ...payer, reserved: payer.reserved + plan.value.reserve, hardSince: plan.value.hardSince });
      const sum = payers.get(payer.accountId);
      payers.set(payer.accountId, { reserve: (sum?.reserve ?? 0) + plan.value.reserve, hardSince: plan.value.hardSince });
    }
    return plan;
  });
  return { decisions, payers };
}

/** What a store reads, inside its transaction, before completing an upload. */
export interface CompletionFacts {
  readonly session: UploadSessionRecord | null;
  /** The stored blob with the finalized hash, if any. */
  readonly storedBlobSize: number | null;
  /** The state of the asset a non-original blob attaches to (null when it does not exist). */
  readonly attachTarget: AssetState | null;
  /** The payer's ledger row (null when it has none yet). */
  readonly payer: QuotaAccountRecord | null;
}

export interface CompletionPlan {
  readonly outcome: 'completed' | 'merged';
  /** The session as it must be stored afterwards. */
  readonly session: UploadSessionRecord;
  /** Bytes released from the payer's reservation. */
  readonly release: number;
  /** A new blob to index, charged to the payer; null when the hash is stored already (a merge). */
  readonly newBlob: { readonly contentHash: string; readonly size: number; readonly chargedTo: string } | null;
  /** The asset to create, or null to attach to `attachTo`. */
  readonly createAsset: { readonly id: string; readonly ownerId: string; readonly uploaderId: string; readonly state: AssetState; readonly dropExpiresAt: number | null } | null;
  readonly assetId: string;
  /** The reference the asset gains (its size is the stored blob's). */
  readonly reference: { readonly kind: UploadSessionRecord['kind']; readonly contentHash: string; readonly size: number };
  readonly hardSince: number | null;
}

export type CompletionRefusal = 'not_open' | 'asset_missing' | 'blob_missing';

/**
 * Completing an upload: an open session turns its reservation into a charge of the real size (or
 * a merge when the hash is stored meanwhile: nothing charged); a session merged at creation only
 * binds its asset, once. A drop becomes a pending asset, anything else a live one.
 */
export function decideCompletion(facts: CompletionFacts, input: CompleteUpload, policy: QuotaPolicy, now: number): CompletionPlan | CompletionRefusal {
  const s = facts.session;
  if (s === null) return 'not_open';
  const binding = s.state === 'Merged' && s.assetId === null;
  if (!binding && !isInFlight(s, now)) return 'not_open';
  if ('attachTo' in input.asset && (facts.attachTarget === null || facts.attachTarget === 'pending_drop')) return 'asset_missing';
  if (binding && facts.storedBlobSize === null) return 'blob_missing';
  const release = binding ? 0 : s.declaredSize;
  const newBlob = !binding && facts.storedBlobSize === null ? { contentHash: input.contentHash, size: input.size, chargedTo: s.payerId } : null;
  const outcome = newBlob !== null ? 'completed' : 'merged';
  const create = 'create' in input.asset ? input.asset.create : null;
  const assetId = create ? create.id : (input.asset as { attachTo: string }).attachTo;
  const before = facts.payer ?? emptyLedgerRecord(s.payerId);
  const payer = { ...before, reserved: before.reserved - release, charged: before.charged + (newBlob?.size ?? 0) };
  return {
    outcome,
    session: { ...s, state: outcome === 'completed' ? 'Completed' : 'Merged', assetId },
    release,
    newBlob,
    createAsset: create && { id: create.id, ownerId: create.ownerId, uploaderId: s.uploaderId, state: create.dropExpiresAt === null ? 'live' : 'pending_drop', dropExpiresAt: create.dropExpiresAt },
    assetId,
    reference: { kind: s.kind, contentHash: input.contentHash, size: facts.storedBlobSize ?? input.size },
    hardSince: settledHardSince(payer, policy, now),
  };
}
