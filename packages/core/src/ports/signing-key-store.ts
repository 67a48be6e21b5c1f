export interface SigningKeyRecord {
  /** JWK thumbprint-free id, carried in the JWT header. */
  readonly kid: string;
  /** 32-byte Ed25519 seed, base64url. */
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
}
