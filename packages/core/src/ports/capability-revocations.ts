/** A capability token this server minted, as remembered for revocation. */
export interface MintedCapability {
  readonly jti: string;
  /** The base URL of the peer it was minted for (its audience). */
  readonly peer: string;
  /** The local account it was minted on behalf of (null on tokens minted before this was kept): deleting the account revokes it. */
  readonly accountId?: string | null;
  readonly issuedAt: number;
  readonly expiresAt: number;
}

export interface RevokedCapability {
  readonly jti: string;
  readonly revokedAt: number;
  readonly expiresAt: number;
}

/**
 * Capability tokens this server minted and the revocations of them. Revocations never go away by a
 * job: readers ask for those at or after a cutoff (core's 24-hour window).
 */
export interface CapabilityRevocationStore {
  recordMintedCapability(token: MintedCapability): Promise<void>;
  /** Revokes one minted token. False when it is unknown or already revoked. */
  revokeCapability(jti: string, at: number): Promise<boolean>;
  /** Revokes every minted token for `peer` not yet revoked and not yet expired at `at`; how many. */
  revokeCapabilitiesFor(peer: string, at: number): Promise<number>;
  /** Revocations made at or after `since`, oldest first. */
  listRevokedCapabilities(since: number): Promise<RevokedCapability[]>;
  /** Forgets tokens that expired at or before `before` and were not revoked after it; how many went. */
  purgeMintedCapabilities(before: number): Promise<number>;
}
