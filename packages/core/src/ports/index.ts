export type { Clock } from './clock.js';
export type { Random } from './random.js';
export type { Ed25519Key, Ed25519Signer } from './signer.js';
export type { PasswordHasher } from './password-hasher.js';
export type { AccountRecord, AccountStore, PasswordChange } from './account-store.js';
export type { AccountSummary, SessionAccess, SessionRecord, SessionLedger, SignInMethod } from './session-ledger.js';
export type { CohortMap, CohortRecord } from './cohort-map.js';
export type { SigningKeyRecord, SigningKeyStore } from './signing-key-store.js';
export type { Logger } from './logger.js';
export type {
  AlbumWriteContext,
  AlbumWriteRefusal,
  FinalizeContext,
  WriteContext,
  WriteGuard,
  WriteRefusal,
} from './write-guard.js';
export type { UploadsInFlight } from './uploads-in-flight.js';
export type { TotpChallengeRecord, TotpEnrollmentRecord, TotpStore } from './totp-store.js';
export type { DeviceDirectoryStore, DeviceEntry, DirectoryRecord, PublishOutcome } from './device-directory.js';
export type { RevokeAllAdmission, RevokeAllChallenge, RevokeAllChallengeStore } from './revoke-all-challenges.js';
export type { AlbumRecord, AlbumStore, PendingUpgrade, ProposeOutcome, UpgradeIntentRecord } from './album-store.js';
export type { BlobRecord, QuotaAccountRecord, QuotaLedger, SweepResult, SweptBlob } from './quota-ledger.js';
export type {
  BlobKind,
  CompleteOutcome,
  CompleteUpload,
  Completed,
  NewUpload,
  OpenRefusal,
  UploadKind,
  UploadSessionRecord,
  UploadSessions,
  UploadState,
} from './upload-sessions.js';
export type { AppendRefusal, Appended, UploadSegment, UploadSegments } from './upload-segments.js';
export type {
  AssetBlob,
  AssetCatalog,
  AssetRecord,
  AssetState,
  BlobReference,
  MetadataReplace,
  TrashedAsset,
} from './asset-catalog.js';
export type {
  Arrived,
  BlobStat,
  BlobStore,
  ByteRange,
  DirectPut,
  DirectPutGrant,
  ListedBlob,
  MultipartStaging,
  PartGrant,
  PresignedAnswer,
  QuarantinedBlob,
  StagedBlob,
  StoredPart,
} from './blob-store.js';
export type { MemberUpgradeStore, WriteTransport } from './member-upgrade.js';
export type { CatalogDatabase, CatalogStep } from './catalog.js';
export type { Ports } from './ports.js';
export type { SchemaStamps, SchemaStatus } from './schema-status.js';
export type { TotpThrottleStore } from './totp-throttle.js';
export type { SignInThrottleStore } from './sign-in-throttle.js';
export type { TotpRecoveryStore } from './totp-recovery.js';
export type { ClosedByRestore, DeploymentRecord, DeploymentStore } from './deployment.js';
export type { LeaseStore } from './lease-store.js';
export type {
  AuthorizationRequest,
  IdentityProvider,
  RedeemOutcome,
  Redemption,
  VerifiedIdentity,
} from './identity-provider.js';
export type { LoginCodeRecord, OidcFlowRecord, OidcFlowStore, OidcPurpose } from './oidc-flow-store.js';
export type { IdentityLink, IdentityLinkStore } from './identity-link-store.js';
export type { DeprecationStore } from './deprecation-store.js';
export type { AttestationHistoryEntry, AttestationKeyRecord, AttestationKeyStore } from './attestation-key-store.js';
export type { SponsoredRecord, SponsorshipStore } from './sponsorship-store.js';
export type { DropRecord, DropReservation, LinkKind, LinkRecord, LinkStore } from './link-store.js';
export type { ClaimOutcome, HandleRecord, HandleStore } from './handle-store.js';
export type { PeerRateStore } from './peer-rate-store.js';
export type { CapabilityRevocationStore, MintedCapability, RevokedCapability } from './capability-revocations.js';
export type { PeerDirectory } from './peer-directory.js';
export type { PeerLookup, PeerReply } from './peer-lookup.js';
export type { AllowlistEntry, RegistrationAllowlist } from './registration-allowlist.js';
export type { CensusBounds, CensusCounts, DeploymentCensus } from './deployment-census.js';
export type { SyncAlbum, SyncAsset, SyncChange, SyncEntry, SyncKind, SyncLog, SyncOp, SyncRead } from './sync-log.js';
export type { AccountErasureStore, ErasureOutcome } from './account-erasure.js';
