import type { Result } from '../errors.js';
import type { QuotaPolicy, QuotaRefusal } from '../quota/machine.js';
import type { UploadsInFlight } from './uploads-in-flight.js';

export type UploadState =
  | 'Pending'
  | 'Uploading'
  | 'WaitingForProcessing'
  | 'Completed'
  | 'Merged'
  | 'Cancelled'
  | 'Expired';
export type BlobKind = 'original' | 'derivative' | 'metadata' | 'provenance';
/** What an upload session carries: a blob of an asset, or a blob received from a federated peer for the cache. */
export type UploadKind = BlobKind | 'federated';

/**
 * Why an opening is refused, nothing written: the quota (hard limit, suspension), the per-peer
 * federated budget, the per-account bound on open sessions, or (a drop) a link that is no longer open.
 */
export type OpenRefusal = QuotaRefusal | 'error.quota.federated_budget' | 'error.request.too_many' | 'error.not_found';

/** One upload session: a reservation of `declaredSize` bytes against `payerId` while it is open. */
export interface UploadSessionRecord {
  readonly id: string;
  /** The authenticated uploader (upload_user_id); a guest drop names the link owner. */
  readonly uploaderId: string;
  /** Whom the ledger charges: the uploader, its sponsor, or a drop link's owner. */
  readonly payerId: string;
  readonly kind: UploadKind;
  readonly declaredSize: number;
  /**
   * Hash the client announced at creation. It decides nothing at creation (no one learns whether a
   * hash is stored without the bytes): finalize requires the received bytes to hash to it.
   */
  readonly contentHash: string | null;
  /** kind `federated` only: the configured peer the blob came from (its per-peer budget). */
  readonly sourcePeer: string | null;
  readonly albumId: string | null;
  readonly intentId: string | null;
  /** Set for a web-upload drop session (its link's `idHash`): finalize creates a pending drop, not an asset. */
  readonly dropLinkIdHash: string | null;
  readonly state: UploadState;
  /** Size and hash of the bytes received by PUT, once they are staged. */
  readonly receivedSize: number | null;
  readonly receivedHash: string | null;
  /** The asset the finalized blob belongs to. */
  readonly assetId: string | null;
  readonly createdAt: number;
  readonly expiresAt: number;
}

/** What the service asks a store to open; the store's decision (core's `decideOpen`) fills in the rest. */
export type NewUpload = Omit<UploadSessionRecord, 'payerId' | 'state' | 'receivedSize' | 'receivedHash' | 'assetId'>;

export interface CompleteUpload {
  readonly uploadId: string;
  readonly contentHash: string;
  readonly size: number;
  /** The asset to create (original, or a drop) or to attach the blob to; null for a federated fill (cached, no asset). */
  readonly asset:
    | { readonly create: { readonly id: string; readonly ownerId: string; readonly dropExpiresAt: number | null } }
    | { readonly attachTo: string }
    | null;
}

/** A completed finalize: the session as stored afterwards. */
export interface Completed {
  readonly outcome: 'completed' | 'merged';
  readonly session: UploadSessionRecord;
}

export type CompleteOutcome = Completed | 'not_open' | 'asset_missing';

/** Upload sessions. Atomic where a reservation or a charge moves. */
export interface UploadSessions extends UploadsInFlight {
  /**
   * Opens a session in one transaction: resolves the payer (the uploader's sponsor, else the
   * uploader), expires the payer's timed-out sessions, reads the facts, applies core's `decideOpen`
   * and writes the session, the reservation and `hard_since` as it says. A refusal writes no session.
   */
  openUpload(request: NewUpload, policy: QuotaPolicy, now: number): Promise<Result<UploadSessionRecord, OpenRefusal>>;
  /**
   * Opens a guest drop through its upload link in the same one transaction as `openUpload`, and
   * in it also applies the link's cap (core's `decideOpen` with the link as stored), grows the
   * link's accepted bytes and records the drop with its token hash: a crash leaves all or none.
   */
  openDrop(
    request: NewUpload & { readonly dropLinkIdHash: string },
    tokenHash: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<UploadSessionRecord, OpenRefusal>>;
  /**
   * Revokes one of the owner's links in one transaction, and cancels its drops still uploading
   * (reservations released, `hard_since` settled); finalized drops stay. False when there was no
   * such unrevoked link of the owner. Returns the cancelled upload ids (their staged bytes can go).
   */
  revokeLink(
    ownerId: string,
    linkIdHash: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<{ readonly revoked: boolean; readonly cancelled: readonly string[] }>;
  /**
   * Moves a link an earlier build stored under its clear id to its `idHash` and `sealedId`, with
   * every reference to it (its drops, their upload sessions), in one transaction; only while it is
   * still stored in clear, so two processes starting at once move it once. False when no link is
   * stored in clear under `clearId`. What the store deletes it leaves, where it can, in no free page
   * or log of its files. Here beside `revokeLink` because it spans links and sessions.
   */
  rekeyLink(clearId: string, to: { readonly idHash: string; readonly sealedId: string }): Promise<boolean>;
  findUpload(id: string): Promise<UploadSessionRecord | null>;
  /** Moves an open (non-terminal, unexpired) session to Uploading / WaitingForProcessing. False if not open. */
  markUploading(id: string, now: number): Promise<boolean>;
  markReceived(id: string, received: { size: number; hash: string } | null, now: number): Promise<boolean>;
  /**
   * Finalizes in one transaction: reads the session, the stored blob, the target asset and the
   * payer, applies core's `decideCompletion` and writes what it plans (reservation released, blob
   * charged or merged, asset created or attached, `hard_since`). Returns the session as stored.
   */
  completeUpload(input: CompleteUpload, policy: QuotaPolicy, now: number): Promise<CompleteOutcome>;
  /** Cancels an open session, releases its reservation and settles `hard_since`. False when it was not open. */
  cancelUpload(id: string, policy: QuotaPolicy, now: number): Promise<boolean>;
}
