import { fromBase64url } from '../encoding/bytes.js';
import type { DropReservation, LinkRecord } from '../ports/link-store.js';

export type LinkStatus = 'active' | 'expired' | 'revoked';

/** Largest wrapped key or seal key a link carries, in bytes once decoded. */
export const MAX_LINK_KEY_BYTES = 4096;
/** Most assets one share link may name. */
export const MAX_LINK_ASSETS = 1000;

/** A link's status from its record and the clock alone: expiry is computed, never written. */
export function linkStatus(link: Pick<LinkRecord, 'expiresAt' | 'revokedAt'>, now: number): LinkStatus {
  if (link.revokedAt !== null) return 'revoked';
  if (link.expiresAt !== null && now >= link.expiresAt) return 'expired';
  return 'active';
}

/**
 * May a guest open a drop of `size` bytes through this link? Only an active upload link, and
 * only while the declared sizes of its drops together stay within `maxBytes`. Every store applies
 * this inside the transaction that then counts the bytes, so concurrent guests cannot pass the cap.
 */
export function decideDropReservation(link: LinkRecord | null, size: number, now: number): DropReservation {
  if (link === null || link.kind !== 'upload' || linkStatus(link, now) !== 'active') return 'closed';
  if (link.maxBytes !== null && link.acceptedBytes + size > link.maxBytes) return 'over_max';
  return 'reserved';
}

/** A base64url key of 1 to MAX_LINK_KEY_BYTES bytes, or the reason it is not one. */
export function checkLinkKey(name: string, text: string): string | null {
  const bytes = fromBase64url(text);
  if (bytes === null || bytes.length === 0) return `${name} must be unpadded base64url.`;
  if (bytes.length > MAX_LINK_KEY_BYTES) return `${name} may hold at most ${MAX_LINK_KEY_BYTES} bytes.`;
  return null;
}
