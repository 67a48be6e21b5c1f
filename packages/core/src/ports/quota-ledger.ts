import type { QuotaLimits, QuotaPolicy } from '../quota/machine.js';

/** One paying account's row in the ledger. */
export interface QuotaAccountRecord {
  readonly accountId: string;
  /** Bytes of stored blobs charged to this account; credited only by the sweep. */
  readonly charged: number;
  /** Declared sizes of this account's open (non-terminal, unexpired) upload sessions. */
  readonly reserved: number;
  /** Operator-set limits; null means the deployment defaults apply. */
  readonly limits: QuotaLimits | null;
  /** When used (charged + reserved) reached the hard limit; null while below it. */
  readonly hardSince: number | null;
  readonly suspendedAt: number | null;
  /** A sponsored account's uploads are charged to its sponsor. */
  readonly sponsorId: string | null;
  /**
   * When this account last trashed, restored, purged or emptied the trash of one of its assets
   * (written in the same transaction as that change); null: never. Its provenance and metadata
   * writes within the follow-up window are admitted as that change's follow-ups (quota/machine.ts).
   */
  readonly trashActivityAt: number | null;
}

/** A stored blob and whom the ledger charged for it (the first uploader: dedup is global). */
export interface BlobRecord {
  /** Hex SHA-256 of the ciphertext: the content address. */
  readonly contentHash: string;
  readonly size: number;
  readonly chargedTo: string;
  /** Set for federated-received blobs: the peer it came from. */
  readonly peer: string | null;
  readonly storedAt: number;
}

/** A blob removed by a sweep: the bytes credited back to `chargedTo`. */
export type SweptBlob = Pick<BlobRecord, 'contentHash' | 'size' | 'chargedTo'>;

export interface SweepResult {
  readonly swept: readonly SweptBlob[];
  /** Upload sessions that ran out of time during this sweep (their staged bytes can go). */
  readonly expiredUploads: readonly string[];
}

/**
 * The quota ledger: per-account counters and the global blob index. Every method is atomic; the
 * ones that take `now` first expire the account's upload sessions whose time ran out (lazily, no job).
 */
export interface QuotaLedger {
  /** Expires the account's timed-out sessions, then returns its row (a zero row when it has none). */
  readLedger(accountId: string, now: number): Promise<QuotaAccountRecord>;
  /**
   * Brings hard_since in line with the row (core's `settledHardSince`) in one transaction.
   * Idempotent, so concurrent callers converge. Returns the stored value.
   */
  settleHardSince(accountId: string, policy: QuotaPolicy, now: number): Promise<number | null>;
  setLimits(accountId: string, limits: QuotaLimits | null): Promise<void>;
  setSuspended(accountId: string, suspendedAt: number | null): Promise<void>;
  findBlob(contentHash: string): Promise<BlobRecord | null>;
  /** Blobs charged to the account, oldest first (the operator's ledger view). */
  listChargedBlobs(accountId: string): Promise<BlobRecord[]>;
  /** Every ledger entry with a content hash above `after` (null: from the start), in hash order, at most `limit`: keyset pages of the whole ledger. */
  listBlobs(after: string | null, limit: number): Promise<BlobRecord[]>;
  /** Drops the receiver's reference; the bytes are credited at the next sweep. False if none. */
  evictFederated(receiver: string, peer: string, contentHash: string): Promise<boolean>;
  /**
   * The garbage collection: expires timed-out sessions and drops, removes every blob nothing
   * references any more, credits its bytes to whoever the ledger charged and settles those
   * accounts' `hard_since`. Returns what went.
   */
  sweep(policy: QuotaPolicy, now: number): Promise<SweepResult>;
}
