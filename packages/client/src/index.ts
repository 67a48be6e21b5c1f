/**
 * @strongroom/client: a typed client for a Strongroom server (browsers, Node, React Native).
 *
 * - {@link StrongroomClient}: the HTTP API typed from the server's OpenAPI document (openapi-fetch),
 *   with the protocol header, refresh on 401, and outages told apart from expiries.
 * - {@link IdentityKey} and {@link DeviceKeys}: the signed device directory, hybrid-signed upgrade
 *   intents and the revoke-all proof.
 * - {@link cohortHash}: the advisory device-cohort hash a sign-in may carry.
 * - The member-side album upgrade machine and the catalog migrator, re-exported from the core.
 */
export { StrongroomClient, PROTOCOL_VERSION, DEFAULT_CHUNK_BYTES, newOidcVerifier, oidcChallenge } from './client.js';
export type {
  BlobDownload,
  DownloadOptions,
  DownloadRange,
  LinkAssetPage,
  SyncPage,
  SessionTokens,
  SignInContext,
  SignInResult,
  StrongroomClientOptions,
  UploadOptions,
  UploadProgress,
  UploadResult,
} from './client.js';
export type { UploadSource } from './source.js';
export { OutageError, SessionLostError, StrongroomError, isOutageCode, readProblem } from './errors.js';
export type { Problem } from './errors.js';
export { DeviceKeys, IdentityKey } from './keys.js';
export type { DeviceSecrets, DirectoryDevice, UpgradeIntentInput } from './keys.js';
export { authenticatorCode, TOTP_PERIOD_SECONDS } from './totp.js';
export { newUuidV7 } from './ids.js';
import type { components, operations, paths } from './generated/api.js';
/** The generated OpenAPI types: every path with its operations, parameters, bodies and answers. */
export type ApiPaths = paths;
/** The generated OpenAPI types: the document's components, every named body schema among them. */
export type ApiComponents = components;
/** The generated OpenAPI types: operations by id, where the document names them. */
export type ApiOperations = operations;
/**
 * Every named schema of the API reference as a type of its own name (`Quota`, `SyncPage`, `Asset`,
 * `Album`, `Link`, `Profile`, `Session`, ...). A name this module exports itself (`Problem`, the
 * problem details the errors carry) is this module's.
 */
export type * from './generated/schemas.js';
export {
  cohortHash,
  PLATFORM_TAGS,
  type PlatformTag,
  MemberUpgradeService,
  memberTransition,
  initialMemberState,
  frozenStateHash,
  type MemberUpgradeServiceDeps,
  type MemberState,
  type MemberEvent,
  type MemberEffect,
  type MemberPhase,
  type MemberIntent,
  type OutgoingWrite,
  type QueuedWrite,
  type MemberUpgradeStore,
  type WriteTransport,
  migrateCatalog,
  planCatalogMigration,
  type CatalogDatabase,
  type CatalogStep,
} from './core.js';
