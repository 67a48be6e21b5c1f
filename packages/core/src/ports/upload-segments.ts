/**
 * One run of bytes a resumable (tus) PATCH added to an upload session, staged in the blob store
 * under an id of its own: two PATCHes never write into the same staged object, so a loser's
 * bytes never mix with the winner's, whatever the timing.
 */
export interface UploadSegment {
  readonly uploadId: string;
  /** Where the run starts in the upload: the Upload-Offset it was sent at. */
  readonly start: number;
  readonly length: number;
  /** The blob store's staging id that holds exactly these bytes (upload/resumable.ts segmentStagingId). */
  readonly segmentId: string;
}

/**
 * Why an append is refused, nothing written: the session is not taking bytes, the offset moved
 * meanwhile, the run passes the declared size, or the session holds as many runs as it may.
 */
export type AppendRefusal = 'not_open' | 'offset_moved' | 'too_large' | 'too_many';

/** The upload's offset after an append. */
export interface Appended {
  readonly offset: number;
}

/** The runs received for resumable uploads: the durable Upload-Offset of each session. */
export interface UploadSegments {
  /** An upload's runs, by `start` ascending. */
  listSegments(uploadId: string): Promise<readonly UploadSegment[]>;
  /**
   * Records one run in one transaction: locks the session row, reads it and its runs, applies
   * core's `decideAppend` and writes what it says (the run, and a Pending session moved to
   * Uploading). Resolves only once the transaction is durable (committed and, on SQLite, its log
   * synced): the offset it answers is what a HEAD in any process then reads.
   */
  appendSegment(segment: UploadSegment, now: number): Promise<Appended | AppendRefusal>;
}
