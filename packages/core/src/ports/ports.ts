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
import type { CapabilityRevocationStore } from './capability-revocations.js';
import type { HandleStore } from './handle-store.js';
import type { PeerRateStore } from './peer-rate-store.js';

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
  /** Handles and the public record, per-peer rate buckets, and revocations of minted capability tokens. */
  readonly discovery: HandleStore & PeerRateStore & CapabilityRevocationStore;
}
