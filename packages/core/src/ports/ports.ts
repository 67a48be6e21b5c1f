import type { AccountStore } from './account-store.js';
import type { AlbumStore } from './album-store.js';
import type { AssetCatalog } from './asset-catalog.js';
import type { CohortMap } from './cohort-map.js';
import type { DeviceDirectoryStore } from './device-directory.js';
import type { QuotaLedger } from './quota-ledger.js';
import type { RevokeAllChallengeStore } from './revoke-all-challenges.js';
import type { SessionLedger } from './session-ledger.js';
import type { SigningKeyStore } from './signing-key-store.js';
import type { TotpStore } from './totp-store.js';
import type { UploadSessions } from './upload-sessions.js';
import type { UploadSegments } from './upload-segments.js';
import type { SchemaStatus } from './schema-status.js';
import type { TotpThrottleStore } from './totp-throttle.js';
import type { TotpRecoveryStore } from './totp-recovery.js';
import type { SignInThrottleStore } from './sign-in-throttle.js';
import type { DeploymentStore } from './deployment.js';
import type { LeaseStore } from './lease-store.js';
import type { IdentityLinkStore } from './identity-link-store.js';
import type { OidcFlowStore } from './oidc-flow-store.js';
import type { DeprecationStore } from './deprecation-store.js';
import type { AttestationKeyStore } from './attestation-key-store.js';
import type { SponsorshipStore } from './sponsorship-store.js';
import type { LinkStore } from './link-store.js';
import type { CapabilityRevocationStore } from './capability-revocations.js';
import type { HandleStore } from './handle-store.js';
import type { PeerRateStore } from './peer-rate-store.js';
import type { RegistrationAllowlist } from './registration-allowlist.js';
import type { DeploymentCensus } from './deployment-census.js';
import type { SyncLog } from './sync-log.js';
import type { AccountErasureStore } from './account-erasure.js';

/**
 * Every store port a deployment runs on, one entry per area. Each adapter builds the whole set in
 * one `create…Ports(db)`; the server, the contract suites and the test servers all take this type.
 * Adding a store is: its port here, its contract suite, one line in each adapter's `create…Ports`.
 */
export interface Ports {
  readonly accounts: AccountStore & SessionLedger & CohortMap & SigningKeyStore;
  /** Second-factor enrollments and sign-in challenges. */
  readonly totp: TotpStore;
  readonly devices: DeviceDirectoryStore & RevokeAllChallengeStore;
  readonly albums: AlbumStore;
  /** Quota ledger, upload sessions (which also count in-flight uploads per album) and asset references. */
  readonly quota: QuotaLedger & UploadSessions & AssetCatalog;
  /** The runs of bytes resumable (tus) uploads received: each session's durable offset. */
  readonly segments: UploadSegments;
  /** The database's schema stamps, read live for the readiness probe. */
  readonly schema: SchemaStatus;
  /** Per-account wrong-code record (second-factor throttling) and recovery through the identity anchor. */
  readonly secondFactor: TotpThrottleStore & TotpRecoveryStore;
  /** Password guessing: the per-address, per-client-address and per-ticket counts, and the sign-in tickets. */
  readonly signIn: SignInThrottleStore;
  /** The deployment record (key fingerprint and token issuer, checked at start), and the leases of periodic jobs. */
  readonly deployment: DeploymentStore & LeaseStore;
  /** OpenID Connect: started flows, login codes and the accounts' provider identities. */
  readonly oidc: OidcFlowStore & IdentityLinkStore;
  /** Protocol deprecation announcements. */
  readonly deprecations: DeprecationStore;
  /** Storage-attestation keys and their append-only history. */
  readonly attestation: AttestationKeyStore;
  /** Sponsored accounts and their owners. */
  readonly sponsorship: SponsorshipStore;
  /** Share and upload links, and the guest drops opened through them. */
  readonly links: LinkStore;
  /** Handles and the public record, per-peer rate buckets, and revocations of minted capability tokens. */
  readonly discovery: HandleStore & PeerRateStore & CapabilityRevocationStore;
  /** Who may register while registration is limited to an allowlist. */
  readonly registration: RegistrationAllowlist;
  /** Every account and the deployment's totals, for the operator's commands and /metrics. */
  readonly census: DeploymentCensus;
  /** The per-account change log library sync pages over, and the album and asset views a client lists. */
  readonly sync: SyncLog;
  /** Deleting an account and everything it holds, in one transaction. */
  readonly erasure: AccountErasureStore;
}
