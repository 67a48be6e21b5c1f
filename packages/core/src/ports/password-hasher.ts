/** Slow, salted password hashing (argon2id in production). Hashes are self-describing strings. */
export interface PasswordHasher {
  /**
   * `lane`, here and below, names who asks (the request's client address): a queueing hasher serves
   * waiting lanes in turn; others ignore it.
   */
  hash(password: string, lane?: string): Promise<string>;
  /** Constant-time comparison is the implementation's job. */
  verify(hash: string, password: string, lane?: string): Promise<boolean>;
  /**
   * Throws `error.server.busy` when a hash or check asked for now would be refused for load (core's
   * BoundedHasher); callers ask before any other work for a sign-in. A hasher without a queue has none.
   */
  shedIfFull?(lane?: string): void;
}
