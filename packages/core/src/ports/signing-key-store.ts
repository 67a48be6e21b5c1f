export interface SigningKeyRecord {
  /** JWK thumbprint-free id, carried in the JWT header. */
  readonly kid: string;
  /**
   * The 32-byte Ed25519 seed sealed under the server key (core's `sealKeySeed`, `v1.…`); earlier
   * builds stored it raw (base64url), and a starting ring seals such rows in place. The store keeps
   * it as an opaque string.
   */
  readonly privateKey: string;
  /** 32-byte Ed25519 public key, base64url. */
  readonly publicKey: string;
  readonly createdAt: number;
  /** When it stopped signing. It still verifies until retiredAt + grace. */
  readonly retiredAt: number | null;
}

/** Persisted access-token signing keys, shared by every server process. */
export interface SigningKeyStore {
  listSigningKeys(): Promise<SigningKeyRecord[]>;
  /** Atomically retires every active key at `at` and inserts `next` as the active one. */
  rotateSigningKey(next: SigningKeyRecord, at: number): Promise<void>;
  /** Inserts `first` only when no key exists yet (first start); returns the keys after. */
  ensureSigningKey(first: SigningKeyRecord): Promise<SigningKeyRecord[]>;
  /**
   * Replaces the stored private key of `kid` with `to` only while it still is `from` (sealing a raw
   * key in place: of two processes doing it at once, one writes). False when nothing changed.
   */
  resealSigningKey(kid: string, from: string, to: string): Promise<boolean>;
}
