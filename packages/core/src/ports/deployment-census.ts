import type { AccountRecord } from './account-store.js';

/**
 * The instants core's rules turn "open" into for a count over every account (operator/census.ts):
 * a session is open while it is not closed, created after `sessionsCreatedAfter` and refreshed
 * after `sessionsRefreshedAfter`; an upload session is in flight while its state is open and it
 * expires after `now`.
 */
export interface CensusBounds {
  readonly now: number;
  readonly sessionsCreatedAfter: number;
  readonly sessionsRefreshedAfter: number;
}

/** What the database holds, counted in one read. */
export interface CensusCounts {
  /** Live accounts: a deleted one (its row kept, `deleted_at` set) is no account (core's isLiveAccount). */
  readonly accounts: number;
  readonly openSessions: number;
  /** Bytes of stored blobs charged to accounts (the ledger's `charged`, summed). */
  readonly charged: number;
  /** Declared sizes of the upload sessions in flight, summed. */
  readonly reserved: number;
  readonly openUploads: number;
  readonly blobs: number;
  readonly blobBytes: number;
}

/** The whole deployment as an operator sees it: every account, and the totals. Reads only. */
export interface DeploymentCensus {
  /** Accounts ordered by id, after `after` (exclusive; null: from the first), at most `limit`; deleted ones too, stamped. */
  listAccounts(after: string | null, limit: number): Promise<AccountRecord[]>;
  countDeployment(bounds: CensusBounds): Promise<CensusCounts>;
}
