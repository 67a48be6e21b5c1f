/** One storage-attestation key. Its private half never leaves the store and the server. */
export interface AttestationKeyRecord {
  readonly kid: string;
  /** The 32-byte Ed25519 seed sealed under the server key, as for signing keys (see SigningKeyRecord). */
  readonly privateKey: string;
  /** 32-byte Ed25519 public key, base64url. */
  readonly publicKey: string;
  readonly createdAt: number;
  /** When a rotation retired it (ms); null while it signs. Not part of the hashed history. */
  readonly retiredAt: number | null;
}

/** One link of the append-only, hash-chained key history (see core's attestation/history.ts). */
export interface AttestationHistoryEntry {
  readonly seq: number;
  readonly kid: string;
  /** 32-byte Ed25519 public key, base64url. */
  readonly publicKey: string;
  /** Unix seconds, as hashed. */
  readonly addedAt: number;
  /** The previous entry's hash ("" for the first). */
  readonly prev: string;
  /** Hex SHA-256 over the entry's canonical CBOR. */
  readonly hash: string;
  /** The previous key's Ed25519 signature over the hash bytes (the first entry's own key), base64url. */
  readonly sig: string;
}

/**
 * Attestation keys and their history, shared by every process. The history only ever grows: there
 * is no method to change or remove an entry, and an append is accepted only when core's
 * `acceptsHistoryEntry` says it extends the stored chain, decided inside the store's transaction.
 */
export interface AttestationKeyStore {
  listAttestationKeys(): Promise<AttestationKeyRecord[]>;
  /** The whole history, by seq ascending. */
  listAttestationHistory(): Promise<AttestationHistoryEntry[]>;
  /**
   * Atomically, when `entry` extends the stored chain: retires every active key at `at`, inserts
   * `key` as the active one and appends `entry`. 'stale' (nothing written) when the chain moved on
   * meanwhile (another process rotated first) or the entry does not extend it.
   */
  appendAttestationKey(
    key: AttestationKeyRecord,
    entry: AttestationHistoryEntry,
    at: number,
  ): Promise<'appended' | 'stale'>;
  /** Replaces the stored private key of `kid` with `to` only while it still is `from`; false when nothing changed. */
  resealAttestationKey(kid: string, from: string, to: string): Promise<boolean>;
}
