/**
 * What one database records about the deployment using it, so that a process configured unlike
 * the others stops at start instead of failing requests later. Never a secret: the key appears
 * only as a keyed fingerprint.
 */
export interface DeploymentRecord {
  /** Hex HMAC-SHA-256 of a fixed label under the server key (core's `secretKeyFingerprint`). */
  readonly keyFingerprint: string;
  /** The public base URL access tokens are minted under (their `iss`). */
  readonly issuer: string;
  /** Whether the issuer was configured (SVC_BASE_URL) rather than derived from the port. */
  readonly issuerConfigured: boolean;
  readonly recordedAt: number;
}

/** How many of each a restore closed (core's `CLOSED_BY_RESTORE`). */
export interface ClosedByRestore {
  readonly sessions: number;
  readonly secondFactorChallenges: number;
  readonly revokeAllChallenges: number;
  readonly oidcLoginCodes: number;
  readonly oidcFlows: number;
}

/** The deployment record: one per database. */
export interface DeploymentStore {
  /**
   * Stores `first` if the database holds no record yet, atomically (two processes starting at once
   * both end up with the one that won), and returns the record as it is after.
   */
  claimDeployment(first: DeploymentRecord): Promise<DeploymentRecord>;
  /**
   * Replaces the recorded issuer (an operator moving the deployment to a new base URL, or a first
   * configured base URL replacing a derived one). False when no record exists.
   */
  setDeploymentIssuer(issuer: { issuer: string; issuerConfigured: boolean }): Promise<boolean>;
  /**
   * What a restore closes (core's `closeRestoredDeployment`), in one transaction over the whole
   * database: closes every open session at `at`, deletes every pending second-factor and revoke-all
   * challenge, every OpenID login code and flow, and stamps every account's `credentialsChangedAt`
   * with `at`. Returns how many of each it closed or deleted.
   */
  closeEverythingForRestore(at: number): Promise<ClosedByRestore>;
}
