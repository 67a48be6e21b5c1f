import { ok, refuse, type Result } from '../errors.js';
import type { UploadKind } from '../ports/upload-sessions.js';

/** The five quota states (spec §9.3), spelled as on the wire. */
export type QuotaState = 'OK' | 'SoftWarning' | 'HardExceeded' | 'GraceExpired' | 'Suspended';
export const QUOTA_STATES: readonly QuotaState[] = ['OK', 'SoftWarning', 'HardExceeded', 'GraceExpired', 'Suspended'];

/** Alert classes the client surfaces (spec §9.4). */
export type QuotaAlert = 'quota_soft' | 'quota_grace_expiring';
export const QUOTA_ALERTS: readonly QuotaAlert[] = ['quota_soft', 'quota_grace_expiring'];

/** Limits in bytes; null means unlimited. */
export interface QuotaLimits {
  readonly soft: number | null;
  readonly hard: number | null;
}

/** Deployment policy: default limits, the grace window and the federated cache share. */
export interface QuotaPolicy {
  readonly defaults: QuotaLimits;
  /** How long the hard condition may hold before GraceExpired (default 14 days). */
  readonly graceMs: number;
  /** Per-(receiver, peer) federated cache budget as a share of the receiver's hard limit (default 0.25). */
  readonly federatedShare: number;
  /** Most open upload sessions (every kind, guest drops included) one paying account may have (SVC_MAX_OPEN_UPLOADS). */
  readonly maxOpenUploads: number;
  /**
   * How long after an account trashed, restored, purged or emptied the trash of one of its assets
   * its provenance and metadata writes count as that change's follow-ups (default 15 minutes).
   */
  readonly followUpMs: number;
  /**
   * How far past the hard limit follow-ups may take `used` (default 16 MiB): "always admitted" for
   * the writes a delete or restore produces, yet never a way past the hard limit without bound.
   */
  readonly followUpOverdraft: number;
}

const DAY = 86_400_000;
export const DEFAULT_QUOTA_POLICY: QuotaPolicy = {
  defaults: { soft: 8 * 1024 ** 3, hard: 10 * 1024 ** 3 },
  graceMs: 14 * DAY,
  federatedShare: 0.25,
  maxOpenUploads: 1000,
  followUpMs: 15 * 60_000,
  followUpOverdraft: 16 * 1024 ** 2,
};

/** What the ledger knows about one paying account: the inputs of every decision below. */
export interface LedgerFacts {
  /** Bytes of stored blobs charged to the account (credited only by the sweep). */
  readonly charged: number;
  /** Declared sizes of the account's open upload sessions. */
  readonly reserved: number;
  /** When used last reached the hard limit; null while below it. */
  readonly hardSince: number | null;
  readonly suspended: boolean;
  readonly limits: QuotaLimits;
}

/** The derived view: what GET /quota shows. */
export interface QuotaStatus {
  /** Charged bytes plus open reservations: the figure the state follows. */
  readonly used: number;
  readonly reserved: number;
  readonly softLimit: number | null;
  readonly hardLimit: number | null;
  readonly state: QuotaState;
  /** When HardExceeded becomes GraceExpired (in the past once expired); null below the hard limit. */
  readonly graceExpiresAt: number | null;
  readonly alerts: readonly QuotaAlert[];
}

/** The limits that apply: the account's own when an operator set them, else the deployment's. */
export function effectiveLimits(own: QuotaLimits | null, policy: QuotaPolicy): QuotaLimits {
  return own ?? policy.defaults;
}

export function usedBytes(facts: Pick<LedgerFacts, 'charged' | 'reserved'>): number {
  return facts.charged + facts.reserved;
}

function atOrOver(used: number, limit: number | null): boolean {
  return limit !== null && used >= limit;
}

/**
 * The value `hard_since` must hold after the ledger changed: kept while used stays at or over the
 * hard limit, set to `now` when it just got there, cleared below it.
 */
export function nextHardSince(
  facts: Pick<LedgerFacts, 'charged' | 'reserved' | 'hardSince' | 'limits'>,
  now: number,
): number | null {
  if (!atOrOver(usedBytes(facts), facts.limits.hard)) return null;
  return facts.hardSince ?? now;
}

/** The state, from the ledger and the clock alone: nothing flips it in the background. */
export function quotaState(facts: LedgerFacts, now: number, graceMs: number): QuotaState {
  if (facts.suspended) return 'Suspended';
  const used = usedBytes(facts);
  if (atOrOver(used, facts.limits.hard)) {
    const since = facts.hardSince ?? now;
    return now - since > graceMs ? 'GraceExpired' : 'HardExceeded';
  }
  if (atOrOver(used, facts.limits.soft)) return 'SoftWarning';
  return 'OK';
}

export function quotaStatus(facts: LedgerFacts, now: number, graceMs: number): QuotaStatus {
  const state = quotaState(facts, now, graceMs);
  const used = usedBytes(facts);
  const over = atOrOver(used, facts.limits.hard);
  const alerts: QuotaAlert[] = [];
  if (atOrOver(used, facts.limits.soft) || over) alerts.push('quota_soft');
  if (state === 'HardExceeded' || (state === 'Suspended' && over && now - (facts.hardSince ?? now) <= graceMs))
    alerts.push('quota_grace_expiring');
  return {
    used,
    reserved: facts.reserved,
    softLimit: facts.limits.soft,
    hardLimit: facts.limits.hard,
    state,
    graceExpiresAt: over ? (facts.hardSince ?? now) + graceMs : null,
    alerts,
  };
}

/**
 * Kinds of write, as far as quota cares (a delete, a restore, a purge or a trash-empty writes no
 * charged bytes and is never asked: every state admits it).
 * - `upload`: a new upload session (the only hard enforcement point; the delta is the declared size).
 * - `metadata_update`: a caption or tag edit replacing a metadata blob; the delta is new minus old.
 * - `metadata_growth`: other writes that only grow metadata: a new share link, a new upload link.
 */
export type WriteKind = 'upload' | 'metadata_update' | 'metadata_growth';

export type QuotaRefusal = 'error.quota.exceeded' | 'error.quota.write_refused';

/** One write, as admission sees it. */
export interface WriteRequest {
  readonly kind: WriteKind;
  /** Bytes the write adds: an upload's declared size, a metadata edit's new size minus the old. */
  readonly delta: number;
  /**
   * Bytes the write adds to `used` now, when that is not `delta`: a metadata edit charges its new
   * blob whole at once, while the blob it replaces is credited only by the next sweep. The
   * follow-up line is judged on it (absent: `delta`).
   */
  readonly charge?: number;
  /** kind `upload`: the kind of blob its session carries; null for the other kinds. */
  readonly uploadKind: UploadKind | null;
  /**
   * When the account the write acts as (the asset owner, not its payer) last trashed, restored,
   * purged or emptied the trash of one of its assets, as its ledger row records it; null: never.
   */
  readonly trashActivityAt: number | null;
}

/** Upload kinds an end-to-end-encrypted client writes after a delete, a restore or a trash-empty. */
export const FOLLOW_UP_UPLOAD_KINDS: readonly UploadKind[] = ['provenance', 'metadata'];

/**
 * Whether the write is a follow-up of a delete, restore, purge or trash-empty (spec §9.6:
 * the provenance and metadata writes a delete, a restore, a purge or a trash-empty produces are
 * admitted in every state): a provenance or metadata upload, or a metadata edit, by an
 * account whose last such change is at most `followUpMs` old. The client writes those blobs, so
 * the server cannot tell them apart from others by content: the window is the evidence.
 */
export function isFollowUp(write: WriteRequest, policy: Pick<QuotaPolicy, 'followUpMs'>, now: number): boolean {
  if (write.trashActivityAt === null || now - write.trashActivityAt > policy.followUpMs) return false;
  if (write.kind === 'metadata_update') return true;
  return write.kind === 'upload' && write.uploadKind !== null && FOLLOW_UP_UPLOAD_KINDS.includes(write.uploadKind);
}

/**
 * What each state admits: one pure function of (status, write, policy, now), which every path
 * that admits a write calls (upload-session openings of every kind, metadata edits, new links).
 * Uploads are refused when used + delta would pass the hard limit (so from HardExceeded on) and
 * while suspended. Growth of metadata is refused in GraceExpired and Suspended; shrinking or
 * same-size metadata edits are always admitted. A follow-up (`isFollowUp`) the rule above would
 * refuse is admitted all the same, in every state but Suspended, while used plus what the write
 * charges now (`charge`, else `delta`) stays within the hard limit plus `followUpOverdraft`:
 * repeated trash and restore cycles cannot grow `used` past that line either, since the line is on
 * `used`, not per change.
 */
export function admitWrite(
  status: Pick<QuotaStatus, 'used' | 'hardLimit' | 'state'>,
  write: WriteRequest,
  policy: Pick<QuotaPolicy, 'followUpMs' | 'followUpOverdraft'>,
  now: number,
): Result<void, QuotaRefusal> {
  const verdict = admitByState(status, write.kind, write.delta);
  if (verdict.ok || status.state === 'Suspended' || !isFollowUp(write, policy, now)) return verdict;
  if (
    status.hardLimit !== null &&
    status.used + (write.charge ?? write.delta) > status.hardLimit + policy.followUpOverdraft
  )
    return verdict;
  return ok(undefined);
}

/** The rule by state alone, for writes that are no follow-ups. */
function admitByState(
  status: Pick<QuotaStatus, 'used' | 'hardLimit' | 'state'>,
  kind: WriteKind,
  delta: number,
): Result<void, QuotaRefusal> {
  switch (kind) {
    case 'upload':
      if (status.state === 'Suspended')
        return refuse('error.quota.write_refused', 'The account is suspended.', { state: status.state });
      if (status.hardLimit !== null && status.used + delta > status.hardLimit) {
        return refuse('error.quota.exceeded', 'This upload would pass the hard storage limit.', {
          used: status.used,
          hard_limit: status.hardLimit,
          declared_size: delta,
        });
      }
      return ok(undefined);
    case 'metadata_update':
    case 'metadata_growth': {
      const grows = kind === 'metadata_growth' || delta > 0;
      if (grows && (status.state === 'GraceExpired' || status.state === 'Suspended')) {
        return refuse('error.quota.write_refused', `Metadata-growth writes are refused in ${status.state}.`, {
          state: status.state,
        });
      }
      return ok(undefined);
    }
  }
}
