import type { JWK } from 'jose';

/**
 * What this server knows of its peers' public records, fetched over HTTP and cached by the adapter:
 * the signing keys of each peer's server info and its revoked-jti record.
 */
export interface PeerDirectory {
  /**
   * The peer's public key for `kid`; null when the peer does not publish it. An unknown `kid`
   * triggers at most one refetch, and refetches are rate-limited per peer, so a flood of forged
   * tokens cannot make this server hammer the peer. Rejects with PeerUnavailableError when the
   * keys cannot be had at all.
   */
  verificationKey(peer: string, kid: string): Promise<JWK | null>;
  /** The jti values the peer lists as revoked, at most 60 seconds old. Rejects when unavailable. */
  revokedJtis(peer: string): Promise<ReadonlySet<string>>;
}
