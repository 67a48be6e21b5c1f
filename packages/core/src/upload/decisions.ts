import { ok, refuse, type Result } from '../errors.js';
import type { AssetState } from '../ports/asset-catalog.js';
import type { QuotaAccountRecord } from '../ports/quota-ledger.js';
import type { LinkRecord } from '../ports/link-store.js';
import type {
  BlobKind,
  CompleteUpload,
  NewUpload,
  OpenRefusal,
  UploadSessionRecord,
} from '../ports/upload-sessions.js';
import { decideDropReservation } from '../links/rules.js';
import {
  emptyLedgerRecord,
  ledgerRecordWith,
  payerIdOf,
  settledHardSince,
  settledLedgerFacts,
} from '../quota/ledger-rules.js';
import { federatedBudget } from '../peer-blob-cache/budget.js';
import { admitWrite, nextHardSince, quotaStatus, type QuotaPolicy } from '../quota/machine.js';
import { isInFlight } from './machine.js';

/**
 * The decisions an upload store applies inside its own transaction: it reads the facts, calls one
 * of these, and writes exactly what the plan says. No store repeats a limit, a state or a predicate.
 */

/** What a store reads before opening an upload session (after expiring the payer's timed-out ones). */
export interface OpenFacts {
  /**
   * The uploader's ledger row: names its sponsor, if any, and when the uploader last trashed,
   * restored, purged or emptied its trash (a provenance or metadata upload soon after is a follow-up).
   */
  readonly uploader: QuotaAccountRecord;
  /** The paying account's row (the uploader's own row when it pays for itself). */
  readonly payer: QuotaAccountRecord;
  /** How many open, unexpired upload sessions (every kind, drops included) the payer has. */
  readonly openSessions: number;
  /**
   * kind `federated` only: bytes the payer has cached from the request's source peer plus the
   * declared sizes of its open fills from that peer (0 for other kinds).
   */
  readonly fromPeer: number;
  /** A guest drop only: its upload link as stored (null when none, or not a drop). */
  readonly link: LinkRecord | null;
}

/** What to write: the session row, the payer's new reservation total and `hard_since`. */
export interface OpenPlan {
  readonly session: UploadSessionRecord;
  /** Bytes to add to the payer's reservations: always the declared size (a merge is decided at finalize). */
  readonly reserve: number;
  readonly hardSince: number | null;
  /** A drop: bytes to add to its link's accepted bytes; 0 otherwise. */
  readonly linkAccepts: number;
}

/** How long a caller refused for too many open sessions is asked to wait before trying again. */
export const OPEN_UPLOADS_RETRY_AFTER_S = 60;

/**
 * How many of the payer's open sessions may be open when this one opens. Guest drops count toward
 * the link owner's payer like any session, but may only take it to half of `maxOpenUploads`
 * (rounded down): a link holder is no one the payer knows, and must not be able to leave the payer,
 * its sponsored accounts and their co-owners without places for their own uploads. Past half, a
 * drop waits like any other opening, and revoking the link frees the places its drops hold.
 */
export function openSessionCap(request: NewUpload, policy: QuotaPolicy): number {
  return request.dropLinkIdHash === null ? policy.maxOpenUploads : Math.floor(policy.maxOpenUploads / 2);
}

/**
 * Opening an upload session of any kind, the only hard quota enforcement point, one rule for every
 * kind (original, derivative, metadata, provenance, a guest drop, a federated fill): the payer may
 * have at most `maxOpenUploads` open sessions (a guest drop, half of them: `openSessionCap`); it is
 * refused while suspended or when used (open reservations included) plus the declared size would
 * pass the hard limit (a follow-up of the uploader's delete or restore within an overdraft:
 * quota/machine.ts admitWrite); a federated fill also
 * stays within its source peer's budget, and a drop within its link's `max_bytes`. Refused, nothing
 * is written. The answer never depends on whether `contentHash` is stored (by anyone): the declared
 * size is always reserved, and a merge is decided at finalize, once the bytes hash to it.
 */
export function decideOpen(
  facts: OpenFacts,
  request: NewUpload,
  policy: QuotaPolicy,
  now: number,
): Result<OpenPlan, OpenRefusal> {
  if (request.dropLinkIdHash !== null) {
    const link = facts.link !== null && facts.link.idHash === request.dropLinkIdHash ? facts.link : null;
    if (decideDropReservation(link, 0, now) === 'closed') return refuse('error.not_found', 'No such upload link.');
  }
  const cap = openSessionCap(request, policy);
  if (facts.openSessions >= cap) {
    return refuse(
      'error.request.too_many',
      `At most ${cap} upload sessions may be open at once; finish or cancel some first.`,
      {
        max_open_uploads: cap,
        retry_after_s: OPEN_UPLOADS_RETRY_AFTER_S,
      },
    );
  }
  const payerId = payerIdOf(facts.uploader);
  const lf = settledLedgerFacts(facts.payer, policy, now);
  const verdict = admitWrite(
    quotaStatus(lf, now, policy.graceMs),
    {
      kind: 'upload',
      delta: request.declaredSize,
      uploadKind: request.kind,
      trashActivityAt: facts.uploader.trashActivityAt,
    },
    policy,
    now,
  );
  if (!verdict.ok) return verdict;
  if (request.kind === 'federated') {
    const budget = federatedBudget(lf.limits, policy);
    if (budget !== null && facts.fromPeer + request.declaredSize > budget) {
      return refuse(
        'error.quota.federated_budget',
        'This blob would pass the federated cache budget for its source peer.',
        {
          source_peer: request.sourcePeer,
          budget,
          spent: facts.fromPeer,
        },
      );
    }
  }
  let linkAccepts = 0;
  if (request.dropLinkIdHash !== null) {
    if (decideDropReservation(facts.link, request.declaredSize, now) === 'over_max') {
      return refuse('error.quota.exceeded', "This drop would pass the upload link's max_bytes.", {
        max_bytes: facts.link!.maxBytes,
        declared_size: request.declaredSize,
      });
    }
    linkAccepts = request.declaredSize;
  }
  const reserve = request.declaredSize;
  return ok({
    session: newSession(request, payerId),
    reserve,
    hardSince: nextHardSince(
      { charged: lf.charged, reserved: lf.reserved + reserve, hardSince: lf.hardSince, limits: lf.limits },
      now,
    ),
    linkAccepts,
  });
}

/** The row a new session is stored as. Field by field, not spread: see `ledgerRecordWith`. */
function newSession(request: NewUpload, payerId: string): UploadSessionRecord {
  return {
    id: request.id,
    uploaderId: request.uploaderId,
    payerId,
    kind: request.kind,
    declaredSize: request.declaredSize,
    contentHash: request.contentHash,
    sourcePeer: request.sourcePeer,
    albumId: request.albumId,
    intentId: request.intentId,
    dropLinkIdHash: request.dropLinkIdHash,
    state: 'Pending',
    receivedSize: null,
    receivedHash: null,
    assetId: null,
    createdAt: request.createdAt,
    expiresAt: request.expiresAt,
  };
}

/** The key `GroupOpenFacts.fromPeer` is read under. */
export const peerKey = (payerId: string, peer: string): string => `${payerId}\n${peer}`;

/** What a store reads once for a group of openings: every row involved, after the expiries. */
export interface GroupOpenFacts {
  /** Ledger rows by account id: each uploader's, and its sponsor's when it has one. */
  readonly accounts: ReadonlyMap<string, QuotaAccountRecord>;
  /** Open, unexpired sessions per payer (absent: none). */
  readonly openSessions: ReadonlyMap<string, number>;
  /** Per `peerKey(payer, peer)` of the group's federated fills: bytes cached from it plus open fills (absent: 0). */
  readonly fromPeer: ReadonlyMap<string, number>;
  /** The upload links of the group's drops by `idHash`, as stored (absent: no such link). */
  readonly links: ReadonlyMap<string, LinkRecord>;
}

/** The plans of a group, in request order, and each payer's row as the group leaves it. */
export interface GroupOpenPlan {
  readonly decisions: readonly Result<OpenPlan, OpenRefusal>[];
  /**
   * Per payer that opened anything: bytes to add to its reservations, sessions to add to its open
   * ones (a store keeping a count of them), and its new `hard_since`.
   */
  readonly payers: ReadonlyMap<
    string,
    { readonly reserve: number; readonly opened: number; readonly hardSince: number | null }
  >;
  /** Per link (by `idHash`) that accepted a drop: bytes to add to its accepted bytes. */
  readonly links: ReadonlyMap<string, number>;
}

/**
 * `decideOpen` for several openings at once, as if each ran in its own transaction right after
 * the one before it: every decision sees the reservations, open sessions, peer bytes and link
 * bytes the earlier ones added. Lets a store read all the facts of a group once and write all the
 * plans once with exactly the outcomes one-at-a-time openings in this order would have had.
 */
export function decideOpenGroup(
  facts: GroupOpenFacts,
  requests: readonly { readonly request: NewUpload; readonly now: number }[],
  policy: QuotaPolicy,
): GroupOpenPlan {
  const rows = new Map(facts.accounts);
  const open = new Map(facts.openSessions);
  const peers = new Map(facts.fromPeer);
  const links = new Map(facts.links);
  const row = (id: string) => rows.get(id) ?? emptyLedgerRecord(id);
  const payers = new Map<string, { reserve: number; opened: number; hardSince: number | null }>();
  const accepted = new Map<string, number>();
  const decisions = requests.map(({ request, now }) => {
    const uploader = row(request.uploaderId);
    const payer = row(payerIdOf(uploader));
    const key = request.sourcePeer === null ? null : peerKey(payer.accountId, request.sourcePeer);
    const link = request.dropLinkIdHash === null ? null : (links.get(request.dropLinkIdHash) ?? null);
    const plan = decideOpen(
      {
        uploader,
        payer,
        openSessions: open.get(payer.accountId) ?? 0,
        fromPeer: key === null ? 0 : (peers.get(key) ?? 0),
        link,
      },
      request,
      policy,
      now,
    );
    if (plan.ok) {
      const { reserve, hardSince, linkAccepts } = plan.value;
      rows.set(payer.accountId, ledgerRecordWith(payer, payer.reserved + reserve, hardSince));
      open.set(payer.accountId, (open.get(payer.accountId) ?? 0) + 1);
      if (key !== null) peers.set(key, (peers.get(key) ?? 0) + reserve);
      if (link !== null && linkAccepts > 0) {
        links.set(link.idHash, { ...link, acceptedBytes: link.acceptedBytes + linkAccepts });
        accepted.set(link.idHash, (accepted.get(link.idHash) ?? 0) + linkAccepts);
      }
      const sum = payers.get(payer.accountId);
      payers.set(payer.accountId, {
        reserve: (sum?.reserve ?? 0) + reserve,
        opened: (sum?.opened ?? 0) + 1,
        hardSince,
      });
    }
    return plan;
  });
  return { decisions, payers, links: accepted };
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
  readonly newBlob: {
    readonly contentHash: string;
    readonly size: number;
    readonly chargedTo: string;
    readonly peer: string | null;
  } | null;
  /** The asset to create, or null to attach to `attachTo` (or, a federated fill, no asset at all). */
  readonly createAsset: {
    readonly id: string;
    readonly ownerId: string;
    readonly uploaderId: string;
    readonly state: AssetState;
    readonly dropExpiresAt: number | null;
  } | null;
  /** The asset the blob belongs to; null for a federated fill. */
  readonly assetId: string | null;
  /** The reference the asset gains (its size is the stored blob's); null for a federated fill. */
  readonly reference: { readonly kind: BlobKind; readonly contentHash: string; readonly size: number } | null;
  /** A federated fill: the receiver's cache reference to the blob (what keeps it from the sweep). */
  readonly federatedRef: { readonly receiver: string; readonly peer: string; readonly contentHash: string } | null;
  readonly hardSince: number | null;
}

export type CompletionRefusal = 'not_open' | 'asset_missing';

/**
 * Completing an upload, decided once per session: an open session turns its reservation into a
 * charge of the real size, or into a merge when the hash is stored already (the bytes were
 * received and hash to it: proof of possession), which charges nothing; the reservation is
 * released either way. Nothing is refused on quota grounds. A drop becomes a pending asset, a
 * federated fill a cache reference of the payer, anything else a live asset or a blob of one.
 */
export function decideCompletion(
  facts: CompletionFacts,
  input: CompleteUpload,
  policy: QuotaPolicy,
  now: number,
): CompletionPlan | CompletionRefusal {
  const s = facts.session;
  if (s === null || !isInFlight(s, now)) return 'not_open';
  if (
    input.asset !== null &&
    'attachTo' in input.asset &&
    (facts.attachTarget === null || facts.attachTarget === 'pending_drop')
  )
    return 'asset_missing';
  const release = s.declaredSize;
  const federated = s.kind === 'federated';
  const newBlob =
    facts.storedBlobSize === null
      ? {
          contentHash: input.contentHash,
          size: input.size,
          chargedTo: s.payerId,
          peer: federated ? s.sourcePeer : null,
        }
      : null;
  const outcome = newBlob !== null ? 'completed' : 'merged';
  const create = input.asset !== null && 'create' in input.asset ? input.asset.create : null;
  const assetId =
    federated || input.asset === null ? null : create ? create.id : (input.asset as { attachTo: string }).attachTo;
  const before = facts.payer ?? emptyLedgerRecord(s.payerId);
  const payer = { ...before, reserved: before.reserved - release, charged: before.charged + (newBlob?.size ?? 0) };
  return {
    outcome,
    session: { ...s, state: outcome === 'completed' ? 'Completed' : 'Merged', assetId },
    release,
    newBlob,
    createAsset: federated
      ? null
      : create && {
          id: create.id,
          ownerId: create.ownerId,
          uploaderId: s.uploaderId,
          state: create.dropExpiresAt === null ? 'live' : 'pending_drop',
          dropExpiresAt: create.dropExpiresAt,
        },
    assetId,
    reference:
      federated || assetId === null
        ? null
        : { kind: s.kind as BlobKind, contentHash: input.contentHash, size: facts.storedBlobSize ?? input.size },
    federatedRef: federated ? { receiver: s.payerId, peer: s.sourcePeer!, contentHash: input.contentHash } : null,
    hardSince: settledHardSince(payer, policy, now),
  };
}
