import { mayReach, type Reachable } from '../access/rules.js';
import { linkStatus } from '../links/rules.js';
import type { BlobReference } from '../ports/asset-catalog.js';
import type { LinkRecord } from '../ports/link-store.js';

/**
 * Who may read a blob back (spec §10.9, §10.10). A content hash alone never grants
 * a read: the reader must reach an asset that references the blob. Two ways exist:
 * - an account, or an owner acting as a sponsored account: an asset of the account the request
 *   acts as references the blob, in any role and any state the catalog still holds (live, trashed
 *   until purged, a pending drop the owner has not yet adopted or discarded);
 * - an anonymous share-link holder: the link is an active share link and a live asset of the link's
 *   owner that it covers (named in `asset_ids`, or its original uploaded to the link's album)
 *   references the blob. Trashing an asset withdraws it from its links until it is restored.
 * Nobody else: not a guest's upload token, not an upload link, not a payer or sponsor as such.
 */

/** The part of a Principal the rule reads. */
export interface BlobReader {
  readonly accountId: string;
  /** Set for a web-upload guest: such a token sends one drop and reads nothing. */
  readonly guestUploadId?: string | undefined;
}

/** How long a presigned download URL may live at most (spec §12.4: at most 5 minutes). */
export const MAX_PRESIGN_TTL_S = 300;

/**
 * How a blob is answered, by the server or by a presigned URL (spec §10.11): ciphertext that never changes under its content hash, for the one reader it was served to.
 */
export const BLOB_ANSWER = {
  cacheControl: 'private, max-age=31536000, immutable',
  contentType: 'application/octet-stream',
} as const;

/** A referencing asset as the access rule sees it. */
const assetOf = (r: BlobReference): Reachable => ({ kind: 'asset', id: r.assetId, accountId: r.ownerId });

/**
 * May `who` read the blob these references (of `who`'s account, as the catalog gave them) point to?
 * Reading a blob is reading an asset that references it, so the trust issue's one rule decides
 * (access/rules.ts `mayReach`): it is asked again for every reference rather than trusting how a
 * store narrowed its answer, and nothing about owners, guests or payers is restated here.
 */
export function mayReadBlob(who: BlobReader, refs: readonly BlobReference[]): boolean {
  return refs.some((r) => mayReach(who, assetOf(r), 'read'));
}

/** Does `link` (as stored, or null) let an anonymous holder read the blob these references point to? */
export function linkCoversBlob(link: LinkRecord | null, refs: readonly BlobReference[], now: number): boolean {
  return refs.some((r) => linkCoversAsset(link, r, now));
}

/**
 * Does `link` (as stored, or null) cover this asset: is it an active share link, and the asset a
 * live one of the link's owner, named by the link or lying in its album? What a recipient may list
 * (`GET /v1/links/{id}/assets`) and read a blob through are this one rule.
 */
export function linkCoversAsset(link: LinkRecord | null, asset: BlobReference, now: number): boolean {
  if (link === null || link.kind !== 'share' || linkStatus(link, now) !== 'active') return false;
  // A share link reads as its owner would, and only what it covers: the owner must still reach the
  // asset (the one rule), and the asset must be live and named by the link or in its album.
  const owner = { accountId: link.ownerId };
  return (
    mayReach(owner, assetOf(asset), 'read') &&
    asset.state === 'live' &&
    (link.assetIds.includes(asset.assetId) || (link.albumId !== null && asset.albumId === link.albumId))
  );
}
