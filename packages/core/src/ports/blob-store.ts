/** Bytes received for an upload, held apart until they are committed under their hash. */
export interface StagedBlob {
  readonly size: number;
  /** Hex SHA-256 of what was received. */
  readonly sha256: string;
}

/**
 * Content-addressed ciphertext storage. Bytes are staged per upload and become a blob only when
 * their SHA-256 matches the claimed hash, so a crash or a wrong hash leaves nothing half-stored.
 */
export interface BlobStore {
  /**
   * Streams bytes into the upload's staging area, replacing earlier staged bytes. More than
   * `maxBytes` is refused (null) and nothing is kept.
   */
  stage(stagingId: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StagedBlob | null>;
  /** Moves staged bytes to their content address if their SHA-256 is `contentHash`. */
  commit(stagingId: string, contentHash: string): Promise<'stored' | 'hash_mismatch' | 'missing'>;
  discard(stagingId: string): Promise<void>;
  has(contentHash: string): Promise<boolean>;
  read(contentHash: string): Promise<Uint8Array | null>;
  remove(contentHash: string): Promise<void>;
  /**
   * The blob's bytes as a stream, or null when it is absent: a backup copies blobs of any size
   * without holding one whole in memory.
   */
  stream(contentHash: string): Promise<AsyncIterable<Uint8Array> | null>;
  /**
   * How a backup takes this store's blobs: `copy` their bytes into the backup (a local disk, which
   * fails with the machine), or `manifest`: list the objects the ledger references, with their
   * hashes, because the store keeps them durably itself (object storage with its own replication
   * and versioning); restoring then needs that store, not bytes from the backup.
   */
  readonly backupMode: 'copy' | 'manifest';
}
