import { fromBase64url, sha256Hex, toBase64url } from '../encoding/bytes.js';
import { CoreError } from '../errors.js';
import type { LinkRecord, LinkStore } from '../ports/link-store.js';
import type { UploadSessions } from '../ports/upload-sessions.js';
import type { SecretSealer } from '../secrets/secret-box.js';

/** Random bytes in a link id. */
export const LINK_ID_BYTES = 16;

/**
 * The one key a link is stored and looked up under: hex SHA-256 of its id's bytes. Null when the
 * text cannot be a link id (16 bytes of unpadded base64url), which names no link.
 *
 * A link id is a bearer capability, so the database never holds it in clear and every lookup by a
 * presented id goes through here. A plain hash is enough: the id is 128 random bits, so no one can
 * find it from its hash by trying candidates, which is all a salt or a keyed hash (HMAC) defends
 * weak secrets such as passwords against; and with no key, every process and the conversion of
 * rows an earlier build wrote compute the same key from the id alone.
 */
export function linkIdHash(linkId: string): string | null {
  const bytes = fromBase64url(linkId);
  return bytes !== null && bytes.length === LINK_ID_BYTES ? sha256Hex(bytes) : null;
}

/** The sealed id's context names its row's hash, so a sealed id copied onto another row does not open. */
const sealContext = (idHash: string): string => `svc-link-id/v1:${idHash}`;

/** The id sealed for its owner's listing, bound to the row it is stored on. */
export async function sealLinkId(sealer: SecretSealer, linkId: string, idHash: string): Promise<string> {
  const bytes = fromBase64url(linkId);
  if (bytes === null || bytes.length !== LINK_ID_BYTES)
    throw new CoreError('error.internal', 'only a link id is sealed as one');
  return sealer.seal(bytes, sealContext(idHash));
}

/**
 * The clear id of a stored link, for its owner. Throws when its sealed copy does not open to an id
 * hashing to the row's key (another server key, or a row altered or copied from elsewhere): a link
 * is never listed under an id that does not reach it. No message names the id or its hash.
 */
export async function openLinkId(sealer: SecretSealer, link: Pick<LinkRecord, 'idHash' | 'sealedId'>): Promise<string> {
  if (link.sealedId === null) {
    throw new CoreError(
      'error.internal',
      'a link is stored in clear; restart a server of this build, which moves it to its hash',
    );
  }
  const bytes = await sealer.open(link.sealedId, sealContext(link.idHash));
  if (bytes === null || bytes.length !== LINK_ID_BYTES || sha256Hex(bytes) !== link.idHash) {
    throw new CoreError(
      'error.internal',
      "a link's sealed id does not open under this server key (SVC_SECRET_KEY) to the id its row is keyed by",
    );
  }
  return toBase64url(bytes);
}

/** The link a holder reaches with `linkId`, found by its hash: the one lookup by a presented id. */
export async function findLinkById(links: Pick<LinkStore, 'findLink'>, linkId: string): Promise<LinkRecord | null> {
  const idHash = linkIdHash(linkId);
  return idHash === null ? null : links.findLink(idHash);
}

/**
 * Moves every link an earlier build stored under its clear id to its hash, with its id sealed
 * beside it and every reference to it moved too (UploadSessions.rekeyLink, one transaction per
 * link). Run at start, before serving. Each move happens only while the row is still in clear, so
 * two processes starting at once move each link once and a second run finds nothing; a crash
 * leaves every link either moved or still in clear, for the next start. Returns how many this call
 * moved. A clear id that is not a link id stops the start (naming no id): it would reach nothing.
 * When any moved, the store then purges what the moves left of the clear ids (`purgeMovedLinkIds`).
 */
export async function sealClearLinkIds(
  stores: {
    links: Pick<LinkStore, 'listClearLinkIds' | 'purgeMovedLinkIds'>;
    sessions: Pick<UploadSessions, 'rekeyLink'>;
  },
  sealer: SecretSealer,
): Promise<number> {
  let moved = 0;
  for (const clearId of await stores.links.listClearLinkIds()) {
    const idHash = linkIdHash(clearId);
    if (idHash === null)
      throw new CoreError(
        'error.internal',
        'a link stored in clear has an id that is not 16 bytes of base64url, so it reaches no one: it is among the links rows whose sealed_id is null, which this build moves at start',
      );
    if (await stores.sessions.rekeyLink(clearId, { idHash, sealedId: await sealLinkId(sealer, clearId, idHash) }))
      moved++;
  }
  if (moved > 0) await stores.links.purgeMovedLinkIds();
  return moved;
}
