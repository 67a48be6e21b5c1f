/** The album row's upgrade columns: which intent holds it, toward which version, until when. */
export interface PendingUpgrade {
  readonly intentId: string;
  readonly toVersion: string;
  readonly receivedAt: number;
  /** received_at + deadline on the server clock; the intent is dead from this instant on. */
  readonly expiresAt: number;
}

export interface AlbumRecord {
  readonly id: string;
  readonly accountId: string;
  /** The protocol version the album was created at; never changes. */
  readonly protocolVersion: string;
  readonly createdAt: number;
  /** The latest accepted intent, possibly expired (expiry is computed, never swept). */
  readonly upgrade: PendingUpgrade | null;
}

/** An accepted upgrade intent. `intentCbor` is the canonical CBOR of the signed intent map. */
export interface UpgradeIntentRecord {
  readonly intentId: string;
  readonly albumId: string;
  readonly fromVersion: string;
  readonly toVersion: string;
  readonly proposerDevice: string;
  readonly deadlineS: number;
  readonly receivedAt: number;
  readonly expiresAt: number;
  readonly intentCbor: Uint8Array;
}

/**
 * What {@link AlbumStore.proposeIntent} did: `accepted` (the album now holds it), `same` (this very
 * intent is already live: nothing changed), `in_flight` (another intent is live), `reused` (the
 * intent id was seen before with other content, or is no longer live), `no_album`.
 */
export type ProposeOutcome =
  | { readonly kind: 'accepted'; readonly intent: UpgradeIntentRecord }
  | { readonly kind: 'same'; readonly intent: UpgradeIntentRecord }
  | { readonly kind: 'in_flight'; readonly liveIntentId: string }
  | { readonly kind: 'reused' }
  | { readonly kind: 'no_album' };

/** Albums, their version pin and the server side of the upgrade ceremony. */
export interface AlbumStore {
  /** Inserts a new album; ids are fresh UUIDv7, so a clash is a fault. */
  createAlbum(album: AlbumRecord): Promise<void>;
  findAlbum(albumId: string): Promise<AlbumRecord | null>;
  /**
   * Atomically applies `decideProposal` (album-upgrade/server.ts) to the album and any intent
   * already stored under `intent.intentId`, then records the intent and sets the album's upgrade
   * columns when it is accepted. At most one live intent per album, whatever the interleaving.
   */
  proposeIntent(intent: UpgradeIntentRecord, now: number): Promise<ProposeOutcome>;
  /** Clears the album's upgrade when `intentId` is the live one at `now`; false otherwise. */
  abortIntent(albumId: string, intentId: string, now: number): Promise<boolean>;
  findIntent(intentId: string): Promise<UpgradeIntentRecord | null>;
}
