import { holds, type RowFilter } from '../filters/filter.js';
import type { CensusBounds, CensusCounts } from '../ports/deployment-census.js';
import type { SessionRecord } from '../ports/session-ledger.js';
import type { UploadSessionRecord } from '../ports/upload-sessions.js';
import { usedBytes } from '../quota/machine.js';
import type { SessionPolicy } from '../session/machine.js';
import { isInFlight } from '../upload/machine.js';

/**
 * The bounds a count over the whole database uses for "open", from the same lifetimes sessionStatus
 * and uploadState judge one record by: open ⇔ now < createdAt + maxMs and now < refreshedAt + idleMs.
 */
export function censusBounds(now: number, policy: Pick<SessionPolicy, 'idleMs' | 'maxMs'>): CensusBounds {
  return { now, sessionsCreatedAfter: now - policy.maxMs, sessionsRefreshedAfter: now - policy.idleMs };
}

/**
 * The sessions a count within bounds takes (the parameters are the bounds' own fields): not closed,
 * and inside both lifetimes.
 */
export const SESSION_COUNTED: RowFilter<'closedAt' | 'createdAt' | 'refreshedAt'> = [
  { op: 'isNull', field: 'closedAt' },
  { op: '>', field: 'createdAt', param: 'sessionsCreatedAfter' },
  { op: '>', field: 'refreshedAt', param: 'sessionsRefreshedAfter' },
];

/** Whether a count within `bounds` takes this session: what an adapter's count applies row by row. */
export function sessionCounted(
  session: Pick<SessionRecord, 'closedAt' | 'createdAt' | 'refreshedAt'>,
  bounds: CensusBounds,
): boolean {
  return holds(SESSION_COUNTED, session, { ...bounds });
}

/** Whether a count within `bounds` takes this upload session (in flight: open state, not yet expired). */
export function uploadCounted(upload: Pick<UploadSessionRecord, 'state' | 'expiresAt'>, bounds: CensusBounds): boolean {
  return isInFlight(upload, bounds.now);
}

/** The deployment's totals as /metrics shows them. `usedBytes` is the quota's used, summed: charged plus reserved. */
export interface DeploymentTotals {
  readonly accounts: number;
  readonly openSessions: number;
  readonly usedBytes: number;
  readonly reservedBytes: number;
  readonly storedBlobs: number;
  readonly storedBytes: number;
  readonly openUploads: number;
}

export function deploymentTotals(counts: CensusCounts): DeploymentTotals {
  return {
    accounts: counts.accounts,
    openSessions: counts.openSessions,
    usedBytes: usedBytes(counts),
    reservedBytes: counts.reserved,
    storedBlobs: counts.blobs,
    storedBytes: counts.blobBytes,
    openUploads: counts.openUploads,
  };
}
