/** Slow, salted password hashing (argon2id in production). Hashes are self-describing strings. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Constant-time comparison is the implementation's job. */
  verify(hash: string, password: string): Promise<boolean>;
}
