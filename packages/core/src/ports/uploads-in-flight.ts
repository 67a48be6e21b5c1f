/**
 * The one fact the upgrade ceremony needs from upload sessions: how many non-terminal sessions
 * (Pending, Uploading, WaitingForProcessing; expired ones excluded by time) target an album.
 * Implemented by the upload-session store.
 */
export interface UploadsInFlight {
  countInFlightUploads(albumId: string, now: number): Promise<number>;
}
