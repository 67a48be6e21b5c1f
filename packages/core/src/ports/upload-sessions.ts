import type { Result } from '../errors.js';
import type { QuotaPolicy, QuotaRefusal } from '../quota/machine.js';
import type { UploadsInFlight } from './uploads-in-flight.js';

export type UploadState = 'Pending' | 'Uploading' | 'WaitingForProcessing' | 'Completed' | 'Merged' | 'Cancelled' | 'Expired';
export type BlobKind = 'original' | 'derivative' | 'metadata' | 'provenance';

/** One upload session: a reservation of `declaredSize` bytes against `payerId` while it is open. */
export interface UploadSessionRecord {
  readonly id: string;
  /** The authenticated uploader (upload_user_id); a guest drop names the link owner. */
  readonly uploaderId: string;
  /** Whom the ledger charges: the uploader, its sponsor, or a drop link's owner. */
  readonly payerId: string;
  readonly kind: BlobKind;
  readonly declaredSize: number;
  /** Hash the client announced at creation (a merge when already stored). */
  readonly contentHash: string | null;
  readonly albumId: string | null;
  readonly intentId: string | null;
  /** Set for a web-upload drop session: finalize creates a pending drop, not an asset. */
  readonly dropLinkId: string | null;
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
  /** The asset to create (original, or a drop) or to attach the blob to. */
  readonly asset: { readonly create: { readonly id: string; readonly ownerId: string; readonly dropExpiresAt: number | null } } | { readonly attachTo: string };
}

/** A completed finalize: the session as stored afterwards. */
export interface Completed {
  readonly outcome: 'completed' | 'merged';
  readonly session: UploadSessionRecord;
}

export type CompleteOutcome = Completed | 'not_open' | 'asset_missing' | 'blob_missing';

/** Upload sessions. Atomic where a reservation or a charge moves. */
export interface UploadSessions extends UploadsInFlight {
  /**
   * Opens a session in one transaction: resolves the payer (the uploader's sponsor, else the
   * uploader), expires the payer's timed-out sessions, reads the facts, applies core's `decideOpen`
   * and writes the session, the reservation and `hard_since` as it says. A refusal writes no session.
   */
  openUpload(request: NewUpload, policy: QuotaPolicy, now: number): Promise<Result<UploadSessionRecord, QuotaRefusal>>;
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
