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

export type OpenUploadOutcome = 'reserved' | 'merged' | 'exceeded';

export interface CompleteUpload {
  readonly uploadId: string;
  readonly contentHash: string;
  readonly size: number;
  /** The asset to create (original, or a drop) or to attach the blob to. */
  readonly asset: { readonly create: { readonly id: string; readonly ownerId: string; readonly dropExpiresAt: number | null } } | { readonly attachTo: string };
}

export type CompleteOutcome = 'completed' | 'merged' | 'not_open' | 'asset_missing' | 'blob_missing';

/** Upload sessions. Atomic where a reservation or a charge moves. */
export interface UploadSessions extends UploadsInFlight {
  /**
   * Opens a session atomically against the payer's ledger. With a content hash already stored the
   * session is written as Merged and nothing is reserved. Otherwise, when hard is not null and the
   * payer's charged + reserved + declaredSize > hard, nothing is written ('exceeded'); else the
   * declared size is reserved. The payer's timed-out sessions are expired first.
   */
  openUpload(session: UploadSessionRecord, hard: number | null, now: number): Promise<OpenUploadOutcome>;
  findUpload(id: string): Promise<UploadSessionRecord | null>;
  /** Moves an open (non-terminal, unexpired) session to Uploading / WaitingForProcessing. False if not open. */
  markUploading(id: string, now: number): Promise<boolean>;
  markReceived(id: string, received: { size: number; hash: string } | null, now: number): Promise<boolean>;
  /**
   * Finalizes atomically: releases the reservation; if the blob is stored already the session
   * becomes Merged and nothing is charged, else the blob is recorded as charged to the payer at
   * its real size and the session becomes Completed. The asset is created or the blob attached.
   * For a Merged session (merged at creation) it only binds the asset, once.
   */
  completeUpload(input: CompleteUpload, now: number): Promise<CompleteOutcome>;
  /** Cancels an open session and releases its reservation. False when it was not open. */
  cancelUpload(id: string, now: number): Promise<boolean>;
}
