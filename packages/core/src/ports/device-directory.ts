/** One device as listed in a published directory. `addedAt` is unix seconds, as signed. */
export interface DeviceEntry {
  readonly deviceId: string;
  readonly ed25519: Uint8Array;
  readonly mldsa65: Uint8Array;
  readonly addedAt: number;
}

/** A directory as accepted: the parsed fields plus the exact signed bytes GET hands back. */
export interface DirectoryRecord {
  readonly accountId: string;
  readonly identityKey: Uint8Array;
  readonly seq: number;
  readonly devices: readonly DeviceEntry[];
  readonly body: Uint8Array;
  readonly acceptedAt: number;
}

export type PublishOutcome = 'published' | 'anchor_mismatch' | 'stale_seq' | 'seq_jump';

/**
 * The account's published device directory and, through it, its identity anchor (the identity key
 * of the first accepted directory, which every later one must repeat).
 */
export interface DeviceDirectoryStore {
  /**
   * Atomic compare-and-set: stores `directory` when the account has none (fixing the anchor), or
   * when it carries the anchor's identity key and a `seq` above the stored one. Otherwise changes
   * nothing and says why (`anchor_mismatch` is checked first).
   */
  publishDirectory(directory: DirectoryRecord): Promise<PublishOutcome>;
  findDirectory(accountId: string): Promise<DirectoryRecord | null>;
  findDevice(accountId: string, deviceId: string): Promise<DeviceEntry | null>;
  /**
   * When the device was listed (`addedAt`, unix seconds), or null when the account's directory
   * does not list it. The write gate asks this on every write; it needs no keys, and reading the
   * ML-DSA key (about 2 KB) on every upload cost more than the rest of the lookup.
   */
  findDeviceAddedAt(accountId: string, deviceId: string): Promise<number | null>;
  /** The identity key fixed by the first accepted directory; null before any. */
  findIdentityAnchor(accountId: string): Promise<Uint8Array | null>;
}
