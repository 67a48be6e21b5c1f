import type { Result } from '../errors.js';
import type { MetadataEditRefusal } from '../assets/metadata-edit.js';
import type { QuotaPolicy } from '../quota/machine.js';
import type { BlobKind } from './upload-sessions.js';

export type AssetState = 'live' | 'trashed' | 'pending_drop';

export interface AssetBlob {
  readonly kind: BlobKind;
  readonly contentHash: string;
  readonly size: number;
}

export interface AssetRecord {
  readonly id: string;
  readonly ownerId: string;
  /** The authenticated uploader of the original (upload_user_id), distinct from the owner. */
  readonly uploaderId: string;
  readonly state: AssetState;
  readonly createdAt: number;
  readonly trashedAt: number | null;
  /** A pending web-upload drop that is not adopted by then counts as discarded. */
  readonly dropExpiresAt: number | null;
  readonly blobs: readonly AssetBlob[];
}

/** One asset that references a blob, as the read rule (core/blobs) needs to judge it. */
export interface BlobReference {
  readonly assetId: string;
  readonly ownerId: string;
  readonly state: AssetState;
  /** The album the asset's original was uploaded to (its upload session's album), if any. */
  readonly albumId: string | null;
}

/** An asset that emptying its owner's trash may take, and the album it lies in (its original's upload session's). */
export interface TrashedAsset {
  readonly assetId: string;
  readonly albumId: string | null;
}

export interface MetadataReplace {
  readonly assetId: string;
  /** The account the edit acts as (the asset's owner): its payer is read from its ledger row, in the transaction. */
  readonly accountId: string;
  readonly contentHash: string;
  readonly size: number;
}

/**
 * Assets as far as quota needs them: which blobs they reference. Trash keeps the references; a
 * hard purge drops them (the bytes are credited by the sweep, never here). A trash, restore, purge
 * or trash-empty that changed anything also sets the asset owner's ledger row's `trashActivityAt`
 * to `now`, in the same transaction: the evidence that admits the change's follow-up writes.
 */
export interface AssetCatalog {
  findAsset(id: string): Promise<AssetRecord | null>;
  /**
   * The assets of `ownerId`, in any state, that reference `contentHash` in any role, each once,
   * ordered by asset id. A fact lookup narrowed by the index (owner, hash): who may read the blob
   * is decided by core's blob rules over what this returns, never here.
   */
  blobReferences(contentHash: string, ownerId: string): Promise<BlobReference[]>;
  /** live -> trashed, and the owner's `trashActivityAt` set to `now`. False (nothing written) when the asset is not live. */
  trashAsset(id: string, now: number): Promise<boolean>;
  /** trashed -> live, and the owner's `trashActivityAt` set to `now`. False (nothing written) when the asset is not trashed. */
  restoreAsset(id: string, now: number): Promise<boolean>;
  /** Deletes a trashed asset or a pending drop and its references, and sets the owner's `trashActivityAt`. False when neither. */
  purgeAsset(id: string, now: number): Promise<boolean>;
  /**
   * The owner's assets in the states from which core's lifecycle lets `empty_trash` apply
   * (EMPTY_TRASH_CANDIDATE_STATES), each with its album, ordered by asset id: a fact lookup; whether
   * the trash may be emptied (each album's write guard) is decided by core over what this returns.
   */
  listTrash(ownerId: string): Promise<TrashedAsset[]>;
  /**
   * Purges, in one transaction, those of `assetIds` that belong to the owner and that core's
   * lifecycle still lets `empty_trash` take (a racing restore or purge may have moved one);
   * returns how many. An asset not named stays, whatever its state. When it purged any, the owner's
   * `trashActivityAt` is set to `now` in the same transaction (none: the owner's row is not written).
   */
  emptyTrash(ownerId: string, assetIds: readonly string[], now: number): Promise<number>;
  /** pending_drop (unexpired) -> live, owned by the link owner. False otherwise. */
  adoptDrop(id: string, now: number): Promise<boolean>;
  /** Deletes a pending drop and its references (the link owner discards it). False when it is not one (adopted meanwhile). */
  discardDrop(id: string): Promise<boolean>;
  /**
   * A metadata edit, decided and written in one transaction (serialised with every other write to
   * the payer's ledger row): the store reads the asset's state and metadata references, the acting
   * account's row, its payer's row (after expiring the payer's lapsed sessions) and whether the new
   * hash is stored, asks core's `decideMetadataReplace`, and writes what it answers: the new blob
   * (charged to the payer unless already stored) and its reference, the old reference dropped,
   * `hard_since` as the plan says. Refused (the asset not live, the quota), nothing is written but
   * the lapsed sessions' expiry.
   */
  replaceMetadata(input: MetadataReplace, policy: QuotaPolicy, now: number): Promise<Result<void, MetadataEditRefusal>>;
}
