import { toBase64url } from '../encoding/bytes.js';
import { LINK_ID_BYTES, linkIdHash, sealLinkId } from '../links/link-id.js';
import type { LinkRecord } from '../ports/link-store.js';
import { testSecretBox } from './secret-box.js';

/** A link id for tests: LINK_ID_BYTES bytes of `fill`, base64url. */
export const testLinkId = (fill: number): string => toBase64url(new Uint8Array(LINK_ID_BYTES).fill(fill));

/** The record LinkService.create would store for link `id` (keyed by its hash, its id sealed under the test key). */
export async function storedLink(id: string, fields: Omit<LinkRecord, 'idHash' | 'sealedId'>): Promise<LinkRecord> {
  const idHash = linkIdHash(id);
  if (idHash === null) throw new Error('not a link id');
  return { idHash, sealedId: await sealLinkId(testSecretBox(), id, idHash), ...fields };
}
