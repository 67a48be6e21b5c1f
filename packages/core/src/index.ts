/**
 * @strongroom/core: the pure domain of Strongroom. State machines as functions over ports; no I/O,
 * no native modules, no framework. Time and randomness come only through the Clock and Random ports.
 *
 * This entry is the supported API (see ARCHITECTURE.md, "The public API"): the services and the
 * types they take and answer, every port, the errors, and the decisions the rule map names. Names
 * are listed one by one so a new export is a choice; api/core.api.md records them and a test fails
 * when this list changes without it.
 */

// filters
export { holds } from './filters/filter.js';
export type { FilterParams, FilterTerm, RowFilter } from './filters/filter.js';

// ports
export type { AccountErasureStore, ErasureOutcome } from './ports/account-erasure.js';
export type { AccountRecord, AccountStore, PasswordChange } from './ports/account-store.js';
export type {
  AlbumRecord,
  AlbumStore,
  PendingUpgrade,
  ProposeOutcome,
  UpgradeIntentRecord,
} from './ports/album-store.js';
export type {
  AssetBlob,
  AssetCatalog,
  AssetRecord,
  AssetState,
  BlobReference,
  MetadataReplace,
  TrashedAsset,
} from './ports/asset-catalog.js';
export type {
  AttestationHistoryEntry,
  AttestationKeyRecord,
  AttestationKeyStore,
} from './ports/attestation-key-store.js';
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
} from './ports/blob-store.js';
export type { CapabilityRevocationStore, MintedCapability, RevokedCapability } from './ports/capability-revocations.js';
export type { CatalogDatabase, CatalogStep } from './ports/catalog.js';
export type { Clock } from './ports/clock.js';
export type { CohortMap, CohortRecord } from './ports/cohort-map.js';
export type { CensusBounds, CensusCounts, DeploymentCensus } from './ports/deployment-census.js';
export type { ClosedByRestore, DeploymentRecord, DeploymentStore } from './ports/deployment.js';
export type { DeprecationStore } from './ports/deprecation-store.js';
export type { DeviceDirectoryStore, DeviceEntry, DirectoryRecord, PublishOutcome } from './ports/device-directory.js';
export type { ClaimOutcome, HandleRecord, HandleStore } from './ports/handle-store.js';
export type { IdentityLink, IdentityLinkStore } from './ports/identity-link-store.js';
export type {
  AuthorizationRequest,
  IdentityProvider,
  RedeemOutcome,
  Redemption,
  VerifiedIdentity,
} from './ports/identity-provider.js';
export type { LeaseStore } from './ports/lease-store.js';
export type { DropRecord, DropReservation, LinkKind, LinkRecord, LinkStore } from './ports/link-store.js';
export type { Logger } from './ports/logger.js';
export type { MemberUpgradeStore, WriteTransport } from './ports/member-upgrade.js';
export type { LoginCodeRecord, OidcFlowRecord, OidcFlowStore, OidcPurpose } from './ports/oidc-flow-store.js';
export type { PasswordHasher } from './ports/password-hasher.js';
export type { PeerDirectory } from './ports/peer-directory.js';
export type { PeerLookup, PeerReply } from './ports/peer-lookup.js';
export type { PeerRateStore } from './ports/peer-rate-store.js';
export type { Ports } from './ports/ports.js';
export type { BlobRecord, QuotaAccountRecord, QuotaLedger, SweepResult, SweptBlob } from './ports/quota-ledger.js';
export type { Random } from './ports/random.js';
export type { AllowlistEntry, RegistrationAllowlist } from './ports/registration-allowlist.js';
export type { RevokeAllAdmission, RevokeAllChallenge, RevokeAllChallengeStore } from './ports/revoke-all-challenges.js';
export type { SchemaStamps, SchemaStatus } from './ports/schema-status.js';
export type {
  AccountSummary,
  SessionAccess,
  SessionLedger,
  SessionRecord,
  SignInMethod,
} from './ports/session-ledger.js';
export type { SignInThrottleStore } from './ports/sign-in-throttle.js';
export type { Ed25519Key, Ed25519Signer } from './ports/signer.js';
export type { SigningKeyRecord, SigningKeyStore } from './ports/signing-key-store.js';
export type { SponsoredRecord, SponsorshipStore } from './ports/sponsorship-store.js';
export type {
  SyncAlbum,
  SyncAsset,
  SyncChange,
  SyncEntry,
  SyncKind,
  SyncLog,
  SyncOp,
  SyncRead,
} from './ports/sync-log.js';
export type { TotpRecoveryStore } from './ports/totp-recovery.js';
export type { TotpChallengeRecord, TotpEnrollmentRecord, TotpStore } from './ports/totp-store.js';
export type { TotpThrottleStore } from './ports/totp-throttle.js';
export type { AppendRefusal, Appended, UploadSegment, UploadSegments } from './ports/upload-segments.js';
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
} from './ports/upload-sessions.js';
export type { UploadsInFlight } from './ports/uploads-in-flight.js';
export { admitAllWrites } from './ports/write-guard.js';
export type {
  AlbumWriteContext,
  AlbumWriteRefusal,
  FinalizeContext,
  WriteContext,
  WriteGuard,
  WriteRefusal,
} from './ports/write-guard.js';

// errors
export { CoreError, guard, ok, refuse } from './errors.js';
export type { ErrorCode, Refusal, Result, StoreFault, Success } from './errors.js';

// encoding
export { concatBytes, fromBase64url, fromHex, sha256, sha256Hex, toBase64url, utf8 } from './encoding/bytes.js';
export { canonicalCbor, decodeCanonicalCbor } from './encoding/cbor.js';
export { isoTimestamp, parseRfc3339Instant } from './encoding/time.js';
export { UUID_PATTERN, uuidv7 } from './encoding/uuid.js';

// ..

// cohort
export { PLATFORM_TAGS, cohortHash, readCohortHash } from './cohort/cohort.js';
export type { PlatformTag } from './cohort/cohort.js';

// versioning
export { DeprecationService } from './versioning/deprecation-service.js';
export type { DeprecationServiceOptions } from './versioning/deprecation-service.js';
export {
  decideAnnouncement,
  deprecationNotice,
  effectiveWindow,
  pendingAnnouncements,
} from './versioning/deprecation.js';
export type { AnnounceRefusal, DeprecationAnnouncement, DeprecationPolicy } from './versioning/deprecation.js';
export { checkAlbumPin, isProtocolVersion, negotiateProtocol } from './versioning/protocol.js';
export type { Negotiated, ProtocolWindow } from './versioning/protocol.js';
export { NoDeploymentError, SchemaVersionError, refuseNewerSchema } from './versioning/schema.js';
export type { SchemaStamp } from './versioning/schema.js';

// profile
export {
  ADDRESS_MAX,
  DISPLAY_NAME_MAX,
  PASSWORD_MAX,
  PASSWORD_MIN,
  addressKeyOf,
  findAccountByAddress,
  normalizeAddress,
  normalizeDisplayName,
} from './profile/rules.js';
export type { NormalizedAddress } from './profile/rules.js';

// session
export { DEFAULT_SESSION_POLICY, decideAccess, decideIssuance, needsTouch, sessionStatus } from './session/machine.js';
export type { SessionPolicy, SessionStatus } from './session/machine.js';
export { RECENT_AUTH_ACTIONS, decideRecentAuthentication } from './session/recent-auth.js';
export type { RecentAuthAction } from './session/recent-auth.js';
export { SessionService } from './session/service.js';
export type { AccessGrant, Principal, SessionServiceDeps, SessionView, TokenPair } from './session/service.js';

// tokens
export { AccessTokens } from './tokens/access-token.js';
export type { AccessTokenClaims, AccessTokensOptions, VerifiedAccessToken } from './tokens/access-token.js';
export { KeyRing } from './tokens/key-ring.js';
export type { KeyRingOptions, PublicJwk } from './tokens/key-ring.js';
export { signCompactJws, webCryptoSigner } from './tokens/signer.js';

// account
export { BoundedHasher, DEFAULT_HASH_QUEUE, DEFAULT_HASH_WAIT_MS } from './account/hash-queue.js';
export type { HasherBounds } from './account/hash-queue.js';
export {
  CREDENTIAL_CHANGE_CLOSES,
  PASSWORD_CHANGE_CLOSES,
  closedByCredentialChange,
  closedByPasswordChange,
} from './account/credential-change.js';
export { SignInMethodsService } from './account/methods.js';
export type { SignInMethods, SignInMethodsServiceDeps } from './account/methods.js';
export { AccountService } from './account/service.js';
export type { AccountServiceDeps, LoginGate, LoginOutcome, Profile } from './account/service.js';

// registration
export { REGISTRATION_MODES, allowlistEntry, decideRegistration, isRegistrationMode } from './registration/rules.js';
export type { RegistrationMode } from './registration/rules.js';
export { RegistrationGate } from './registration/service.js';
export type { RegistrationGateDeps } from './registration/service.js';

// secrets
export { keySealContext } from './secrets/key-seal.js';
export type { SealedKeyKind } from './secrets/key-seal.js';
export { SecretBox } from './secrets/secret-box.js';
export type { SecretSealer } from './secrets/secret-box.js';

// totp
export {
  TOTP_CHALLENGE_LAPSED,
  TOTP_CODE_PATTERN,
  TOTP_PERIOD_S,
  acceptsStep,
  attemptsLeft,
  codeForStep,
  judgeChallenge,
  stepAt,
} from './totp/machine.js';
export type { TotpState } from './totp/machine.js';
export { TotpSecretBox } from './totp/secret-box.js';
export { TotpService } from './totp/service.js';
export type { TotpEnrollment, TotpServiceDeps } from './totp/service.js';

// devices
export { DEVICE_ID_PATTERN, directorySigningMessage, isDeviceActive, isDeviceId } from './devices/directory.js';
export {
  MAX_LIVE_REVOKE_ALL_CHALLENGES,
  REVOKE_ALL_CHALLENGE_LAPSED,
  RevokeAllService,
  admitRevokeAllChallenge,
  logoutAllMessage,
  revokeAllChallengeLapsed,
} from './devices/revoke-all.js';
export type { RevokeAllServiceDeps } from './devices/revoke-all.js';
export { DeviceDirectoryService } from './devices/service.js';
export type { DeviceDirectoryServiceDeps, PublishRefusal } from './devices/service.js';

// albums
export { AlbumService } from './albums/service.js';
export type { AlbumServiceDeps, CreatedAlbum } from './albums/service.js';

// write-guard
export { AlbumWriteGuard } from './write-guard/guard.js';
export type { AlbumWriteGuardDeps } from './write-guard/guard.js';

// album-upgrade
export { upgradeIntentMessage, verifyHybrid } from './album-upgrade/intent.js';
export type { SignedUpgradeIntent, UpgradeIntent } from './album-upgrade/intent.js';
export { MemberUpgradeService } from './album-upgrade/member-service.js';
export type { MemberUpgradeServiceDeps } from './album-upgrade/member-service.js';
export { frozenStateHash, initialMemberState, memberTransition } from './album-upgrade/member.js';
export type {
  ForkRecord,
  FrozenAlbumState,
  MemberEffect,
  MemberEvent,
  MemberIntent,
  MemberPhase,
  MemberState,
  OutgoingWrite,
  QueuedWrite,
  UpgradedFrom,
} from './album-upgrade/member.js';
export {
  decideAbort,
  decideManifestIntent,
  decideProposal,
  decideQuiescence,
  upgradeStatus,
} from './album-upgrade/server.js';
export type { UpgradePhase, UpgradeStatus } from './album-upgrade/server.js';
export { UpgradeService } from './album-upgrade/service.js';
export type { ProposeRefusal, UpgradeCaller, UpgradeServiceDeps } from './album-upgrade/service.js';

// quota
export { payerIdOf } from './quota/ledger-rules.js';
export {
  DEFAULT_QUOTA_POLICY,
  QUOTA_ALERTS,
  QUOTA_STATES,
  admitWrite,
  nextHardSince,
  quotaStatus,
} from './quota/machine.js';
export type {
  LedgerFacts,
  QuotaAlert,
  QuotaLimits,
  QuotaPolicy,
  QuotaRefusal,
  QuotaState,
  QuotaStatus,
  WriteKind,
  WriteRequest,
} from './quota/machine.js';
export { QuotaService } from './quota/service.js';
export type { LedgerReport, QuotaServiceDeps, SweepReport } from './quota/service.js';

// assets
export { DROP_LAPSED, decideAssetTransition } from './assets/lifecycle.js';
export type { AssetAction, AssetLifecycleFacts, AssetTransition, AssetTransitionRefusal } from './assets/lifecycle.js';
export type { MetadataEditRefusal } from './assets/metadata-edit.js';
export { AssetService } from './assets/service.js';
export type { AssetServiceDeps, AssetWrite } from './assets/service.js';

// upload
export { decideCompletion, decideOpen, decideOpenGroup } from './upload/decisions.js';
export type {
  CompletionFacts,
  CompletionPlan,
  CompletionRefusal,
  GroupOpenFacts,
  GroupOpenPlan,
  OpenFacts,
  OpenPlan,
} from './upload/decisions.js';
export { DEFAULT_DIRECT_PUT_TTL_S, decideArrival, decideStored, directPutGrant } from './upload/direct.js';
export {
  DEFAULT_PART_BYTES,
  MAX_PART_BYTES,
  MAX_PART_URLS,
  MAX_PARTS,
  MIN_PART_BYTES,
  countedParts,
  decidePartGrants,
  decidePartsComplete,
  directPlan,
  missingParts,
  partLength,
} from './upload/multipart.js';
export type { DirectPlan, PartPlan, PartRequest } from './upload/multipart.js';
export {
  CONTENT_HASH_PATTERN,
  UPLOAD_IN_FLIGHT,
  UPLOAD_LAPSED,
  UPLOAD_STATES,
  decideCancel,
  decideFinalize,
  decidePut,
  isInFlight,
  uploadState,
} from './upload/machine.js';
export {
  ResumableUploads,
  decideAppend,
  resumableOffset,
  segmentOwner,
  takesSegments,
  uploadOffset,
} from './upload/resumable.js';
export type { AppendBytes, ResumableDeps, ResumableView } from './upload/resumable.js';
export { BLOB_KINDS, DEFAULT_UPLOAD_POLICY, MAX_DECLARED_SIZE, UploadService } from './upload/service.js';
export type {
  CreateUpload,
  CreatedUpload,
  FinalizeUpload,
  MultipartOffer,
  PartsView,
  PutUpload,
  SignedDirectPut,
  SignedPart,
  UploadServiceDeps,
  UploadView,
} from './upload/service.js';

// catalog
export { migrateCatalog, planCatalogMigration } from './catalog/migrator.js';

// operations
export { decideLease, mayReleaseLease } from './operations/lease.js';
export type { LeaseRecord } from './operations/lease.js';
export { checkReadiness, schemaIsCurrent } from './operations/readiness.js';

// operator
export { SESSION_COUNTED, censusBounds, sessionCounted, uploadCounted } from './operator/census.js';
export type { DeploymentTotals } from './operator/census.js';
export { OperatorService } from './operator/service.js';
export type { AccountOverview, OperatorServiceDeps, OperatorSessionView } from './operator/service.js';

// second-factor
export { TotpRecoveryService } from './second-factor/recovery.js';
export type { TotpRecoveryServiceDeps } from './second-factor/recovery.js';
export {
  THROTTLE_FREE_WRONG_CODES,
  THROTTLE_WINDOW_MS,
  claimCodeCheck,
  throttleDecision,
} from './second-factor/throttle.js';
export type { CodeCheckAdmission, TotpThrottleState } from './second-factor/throttle.js';

// sign-in-throttle
export { clientAddress, parseCidrList, sourceKey } from './sign-in-throttle/client-address.js';
export type { Cidr, IpBytes } from './sign-in-throttle/client-address.js';
export {
  ADDRESS_FREE_WRONG,
  DEFAULT_SOURCE_FAILURES,
  SIGN_IN_TICKETS_DROPPED,
  SIGN_IN_TICKET_LAPSED,
  SOURCE_WINDOW_MS,
  TICKET_WRONG_PASSWORDS,
  addressHeld,
  claimPasswordCheck,
  droppedByIssuance,
  recordSourceFailure,
  recordStrike,
  sourceDecision,
  ticketHolds,
} from './sign-in-throttle/rules.js';
export type {
  AddressGuessState,
  CheckedBy,
  PasswordCheckAdmission,
  PasswordCheckClaim,
  PasswordCheckFacts,
  PasswordCheckWrites,
  SignInTicketRecord,
  SourceFailureState,
  TicketAccount,
} from './sign-in-throttle/rules.js';

// deployment
export { judgeDeployment, secretKeyFingerprint } from './deployment/stamp.js';
export type { DeploymentVerdict } from './deployment/stamp.js';

// oidc
export { OIDC_LAPSED } from './oidc/rules.js';
export { OidcService } from './oidc/service.js';
export type { CallbackOutcome, Completion, OidcServiceDeps, StartInput } from './oidc/service.js';

// attestation
export { makeHistoryEntry, verifyHistory } from './attestation/history.js';
export { AttestationRing } from './attestation/ring.js';
export type { AttestationRecord, AttestationRingOptions, ReceiptRequest } from './attestation/ring.js';

// sponsorship
export {
  decideActAs,
  decideOwnerRemoval,
  decideSponsor,
  decideSponsorChange,
  decideSponsorCreation,
} from './sponsorship/rules.js';
export type { SponsorChangeFacts, SponsorFacts } from './sponsorship/rules.js';
export { SponsorshipService, sponsoredAddressKey } from './sponsorship/service.js';
export type { SponsorshipServiceDeps } from './sponsorship/service.js';

// links
export { findLinkById, linkIdHash, openLinkId, sealClearLinkIds, sealLinkId } from './links/link-id.js';
export { decideDropReservation, linkStatus } from './links/rules.js';
export type { LinkStatus } from './links/rules.js';
export { LinkService } from './links/service.js';
export type { DropState, DropView, Link, LinkServiceDeps, NewLink, OpenedDrop } from './links/service.js';

// blobs
export { putBackAllQuarantined } from './blobs/handoff.js';
export { BLOB_ANSWER, linkCoversAsset, linkCoversBlob, mayReadBlob } from './blobs/rules.js';
export type { BlobReader } from './blobs/rules.js';
export { BlobReadService } from './blobs/service.js';
export type { BlobReadServiceDeps, PresignedBlob, ReadableBlob } from './blobs/service.js';
export { blobsAgree, checkBlobStore, verifyBlobs } from './blobs/verify.js';
export type { BlobStoreCheck, BlobVerifyReport, LedgerBlob } from './blobs/verify.js';

// peer-blob-cache
export { federatedBudget } from './peer-blob-cache/budget.js';
export { decideSourcePeer } from './peer-blob-cache/rules.js';

// discovery
export { DEFAULT_LOOKUP_RATE_PER_MINUTE, decideLookupDraw } from './discovery/lookup-budget.js';
export { anonymousRecord, handleInService, lookupAnswer, parseHandle } from './discovery/rules.js';
export type { Handle, HandleView, LookupAnswer } from './discovery/rules.js';
export { DiscoveryService } from './discovery/service.js';
export type { DiscoveryServiceDeps } from './discovery/service.js';

// federation
export { CAPABILITY_SCOPE, capabilityClaims, signCapability, verifyCapability } from './federation/capability.js';
export type { CapabilityClaims, CapabilityRefusal, VerifiedCapability } from './federation/capability.js';
export { PeerUnavailableError } from './federation/peer-error.js';
export {
  CAPABILITY_PURGEABLE,
  CAPABILITY_REVOCABLE,
  REVOCATION_LISTED,
  REVOCATION_WINDOW_S,
  inRevocationWindow,
} from './federation/revocation.js';
export { FederationService } from './federation/service.js';
export type { CapabilityCheck, FederationServiceDeps } from './federation/service.js';

// peer-rate-limit
export { UNITS_PER_TOKEN, takeToken } from './peer-rate-limit/bucket.js';
export type { Bucket, BucketDecision } from './peer-rate-limit/bucket.js';

// backup
export { formatLockHolder, lockIsStale, parseLockHolder } from './backup/lock.js';
export type { LockHolder } from './backup/lock.js';
export { openManifest, sealManifest } from './backup/mac.js';
export {
  MANIFEST_FILE,
  checkManifest,
  describeBackupProblem,
  formatManifest,
  parseManifest,
} from './backup/manifest.js';
export type { BackupProblem, ManifestEntry } from './backup/manifest.js';
export { closeRestoredDeployment } from './backup/restore-closes.js';
export type { RestoreClosing } from './backup/restore-closes.js';
export { backupDue, backupName, backupsToPrune, finishedBackups, newestBackupAgeSeconds } from './backup/retention.js';
export { backupHoldsKey, chooseBackupSealing } from './backup/sealing.js';
export type { BackupSealingChoice, BackupSealingProblem, BackupSealingSettings } from './backup/sealing.js';

// access
export { decideLookup, mayActForAccount, mayReach, reach } from './access/rules.js';
export type { AccessAction, Accessor, Looker, ObjectKind, Reachable } from './access/rules.js';

// sync
export { ALBUM_COUNTED_STATES, albumCreated, assetChanges, linkChanges } from './sync/changes.js';
export { openSyncCursor } from './sync/cursor.js';
export {
  DEFAULT_TOMBSTONE_DAYS,
  SYNC_PAGE_LIMIT,
  TOMBSTONE_PRUNED,
  cursorExpired,
  planSyncPage,
  tombstoneHorizon,
  tombstonePruned,
} from './sync/page.js';
export type { PageChange, PagePlan, SyncPosition } from './sync/page.js';
export { SyncService } from './sync/service.js';
export type { CursorRefusal, SyncLink, SyncPage, SyncPageChange, SyncServiceDeps } from './sync/service.js';

// account-deletion
export {
  accountState,
  cancelledByErasure,
  decideDeletionCaller,
  isLiveAccount,
  planErasure,
  revokedByErasure,
} from './account-deletion/rules.js';
export type { ErasureFacts, ErasurePlan } from './account-deletion/rules.js';
export { AccountDeletionService } from './account-deletion/service.js';
export type { AccountDeletionServiceDeps, DeletionRefusal } from './account-deletion/service.js';
