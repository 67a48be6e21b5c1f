export type LinkKind = 'share' | 'upload';

/**
 * A share link (decryption keys wrapped under a secret that stays in the link) or a web-upload
 * link (guests seal contributions to `sealKey`). Its id, 16 random bytes in base64url, is a bearer
 * capability: the store holds only its hash and a sealed copy (core's links/link-id.ts), so a copy
 * of the database reaches no link.
 */
export interface LinkRecord {
  /** Hex SHA-256 of the id's bytes (core's `linkIdHash`): the key the link is stored and found under. */
  readonly idHash: string;
  /**
   * The id sealed under the server key, bound to `idHash`, for the owner's listing. Null only on a
   * row an earlier build wrote, whose `idHash` then holds the clear id, until a start seals it in
   * place (core's `sealClearLinkIds`).
   */
  readonly sealedId: string | null;
  readonly ownerId: string;
  readonly kind: LinkKind;
  readonly albumId: string | null;
  /** Share links only: the assets it covers (empty when it covers the album). */
  readonly assetIds: readonly string[];
  /** Share links: base64url of the wrapped keys. */
  readonly wrappedKey: string | null;
  /** Upload links: base64url of the link-scoped public key. */
  readonly sealKey: string | null;
  /** Upload links: the most declared bytes all its drops together may reach; null = no cap. */
  readonly maxBytes: number | null;
  /** Upload links: declared bytes of the drops opened through it so far. */
  readonly acceptedBytes: number;
  readonly createdAt: number;
  /**
   * The session that created the link, so that its owner can tell a link they made from one a
   * stolen token made (`GET /v1/links`). Absent or null on links made before it was kept.
   */
  readonly createdSessionId?: string | null;
  /** null = never expires; the link reads as gone from this instant on (computed, no job). */
  readonly expiresAt: number | null;
  readonly revokedAt: number | null;
}

/** One guest drop opened through an upload link: the upload session and its token's hash. */
export interface DropRecord {
  /** The upload session (and, once finalized, the pending asset) id. */
  readonly uploadId: string;
  /** The link's `idHash`. */
  readonly linkIdHash: string;
  /** The link owner, charged for the drop. */
  readonly ownerId: string;
  /** Hex SHA-256 of the one-drop upload token; the token itself is never stored. */
  readonly tokenHash: string;
  readonly declaredSize: number;
  readonly createdAt: number;
}

/** What a link's cap says of a drop (core's `decideDropReservation`, applied by the upload store). */
export type DropReservation = 'reserved' | 'closed' | 'over_max';

/** Links and the drops guests open through them. "Not found" is null. */
export interface LinkStore {
  createLink(link: LinkRecord): Promise<void>;
  findLink(idHash: string): Promise<LinkRecord | null>;
  /** The owner's links, revoked and expired ones included, oldest first. */
  listLinks(ownerId: string): Promise<LinkRecord[]>;
  findDrop(uploadId: string): Promise<DropRecord | null>;
  /** The link's drops, oldest first. */
  listDrops(linkIdHash: string): Promise<DropRecord[]>;
  /** The clear ids of the links an earlier build stored unhashed (`sealedId` null), for `UploadSessions.rekeyLink`. */
  listClearLinkIds(): Promise<string[]>;
  /**
   * After links moved from their clear ids (`UploadSessions.rekeyLink`): clears what the moves left
   * of those ids in the store's files, where a deleted or updated row's old version outlives it
   * (PostgreSQL's, until vacuumed). A copy of the files taken afterwards holds no clear id.
   */
  purgeMovedLinkIds(): Promise<void>;
}
