import type { UploadSessions } from '../ports/upload-sessions.js';

/**
 * The album an asset lies in: the one its original was uploaded into (an asset's id is its
 * original's upload id; an adopted drop's, its drop's, which lands in its link's album). Null when
 * it lies in none. A write that lands on such an asset (a derivative, metadata or provenance blob
 * attached to it at finalize, a drop adopted) is a write to that album, and passes the album's
 * write guard (pin and quiescence) like any other.
 */
export async function albumOfAsset(
  uploads: Pick<UploadSessions, 'findUpload'>,
  assetId: string,
): Promise<string | null> {
  const original = await uploads.findUpload(assetId);
  return original?.albumId ?? null;
}
