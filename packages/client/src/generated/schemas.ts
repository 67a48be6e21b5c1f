/**
 * The named schemas of the Strongroom HTTP API, one type each, from the server's OpenAPI document
 * (packages/client/openapi.json). Do not edit: run `npm run generate -w @strongroom/client`.
 */

import type { components } from './api.js';

/** The API reference's `AccessToken` schema */
export type AccessToken = components['schemas']['AccessToken'];
/** The API reference's `Album` schema */
export type Album = components['schemas']['Album'];
/** The API reference's `AlbumCreated` schema */
export type AlbumCreated = components['schemas']['AlbumCreated'];
/** The API reference's `AlbumList` schema */
export type AlbumList = components['schemas']['AlbumList'];
/** The API reference's `Asset` schema */
export type Asset = components['schemas']['Asset'];
/** The API reference's `AssetBlob` schema */
export type AssetBlob = components['schemas']['AssetBlob'];
/** The API reference's `AttestationKeys` schema */
export type AttestationKeys = components['schemas']['AttestationKeys'];
/** The API reference's `Cohort` schema */
export type Cohort = components['schemas']['Cohort'];
/** The API reference's `DeprecationRecord` schema */
export type DeprecationRecord = components['schemas']['DeprecationRecord'];
/** The API reference's `DirectPut` schema */
export type DirectPut = components['schemas']['DirectPut'];
/** The API reference's `DirectoryAccepted` schema */
export type DirectoryAccepted = components['schemas']['DirectoryAccepted'];
/** The API reference's `Drop` schema */
export type Drop = components['schemas']['Drop'];
/** The API reference's `DropList` schema */
export type DropList = components['schemas']['DropList'];
/** The API reference's `DropOpened` schema */
export type DropOpened = components['schemas']['DropOpened'];
/** The API reference's `Empty` schema: An empty JSON object */
export type Empty = components['schemas']['Empty'];
/** The API reference's `FinalizeManifest` schema */
export type FinalizeManifest = components['schemas']['FinalizeManifest'];
/** The API reference's `FinalizeRequest` schema */
export type FinalizeRequest = components['schemas']['FinalizeRequest'];
/** The API reference's `FinalizedUpload` schema */
export type FinalizedUpload = components['schemas']['FinalizedUpload'];
/** The API reference's `Handle` schema */
export type Handle = components['schemas']['Handle'];
/** The API reference's `HandleClaim` schema */
export type HandleClaim = components['schemas']['HandleClaim'];
/** The API reference's `HandleLookup` schema */
export type HandleLookup = components['schemas']['HandleLookup'];
/** The API reference's `Jwk` schema */
export type Jwk = components['schemas']['Jwk'];
/** The API reference's `Link` schema */
export type Link = components['schemas']['Link'];
/** The API reference's `LinkAssetChange` schema */
export type LinkAssetChange = components['schemas']['LinkAssetChange'];
/** The API reference's `LinkAssetPage` schema */
export type LinkAssetPage = components['schemas']['LinkAssetPage'];
/** The API reference's `LinkCreated` schema */
export type LinkCreated = components['schemas']['LinkCreated'];
/** The API reference's `LinkList` schema */
export type LinkList = components['schemas']['LinkList'];
/** The API reference's `LoginRequest` schema */
export type LoginRequest = components['schemas']['LoginRequest'];
/** The API reference's `LogoutAllChallenge` schema */
export type LogoutAllChallenge = components['schemas']['LogoutAllChallenge'];
/** The API reference's `LogoutAllRequest` schema */
export type LogoutAllRequest = components['schemas']['LogoutAllRequest'];
/** The API reference's `LogoutAllResult` schema */
export type LogoutAllResult = components['schemas']['LogoutAllResult'];
/** The API reference's `NewAlbum` schema */
export type NewAlbum = components['schemas']['NewAlbum'];
/** The API reference's `NewDrop` schema */
export type NewDrop = components['schemas']['NewDrop'];
/** The API reference's `NewLink` schema */
export type NewLink = components['schemas']['NewLink'];
/** The API reference's `NewOwner` schema */
export type NewOwner = components['schemas']['NewOwner'];
/** The API reference's `NewShareLink` schema */
export type NewShareLink = components['schemas']['NewShareLink'];
/** The API reference's `NewUpload` schema */
export type NewUpload = components['schemas']['NewUpload'];
/** The API reference's `NewUploadLink` schema */
export type NewUploadLink = components['schemas']['NewUploadLink'];
/** The API reference's `OidcCompleteRequest` schema */
export type OidcCompleteRequest = components['schemas']['OidcCompleteRequest'];
/** The API reference's `OidcCompletion` schema */
export type OidcCompletion = components['schemas']['OidcCompletion'];
/** The API reference's `OidcIdentity` schema */
export type OidcIdentity = components['schemas']['OidcIdentity'];
/** The API reference's `OidcStart` schema */
export type OidcStart = components['schemas']['OidcStart'];
/** The API reference's `OidcStartRequest` schema */
export type OidcStartRequest = components['schemas']['OidcStartRequest'];
/** The API reference's `PartUrl` schema */
export type PartUrl = components['schemas']['PartUrl'];
/** The API reference's `PartUrls` schema */
export type PartUrls = components['schemas']['PartUrls'];
/** The API reference's `PartUrlsRequest` schema */
export type PartUrlsRequest = components['schemas']['PartUrlsRequest'];
/** The API reference's `PasswordChange` schema */
export type PasswordChange = components['schemas']['PasswordChange'];
/** The API reference's `PresignedUrl` schema */
export type PresignedUrl = components['schemas']['PresignedUrl'];
/** The API reference's `Problem` schema: RFC 9457 problem details. Extra members carry what the client needs to act on the refusal. */
export type Problem = components['schemas']['Problem'];
/** The API reference's `Profile` schema */
export type Profile = components['schemas']['Profile'];
/** The API reference's `ProfileUpdate` schema */
export type ProfileUpdate = components['schemas']['ProfileUpdate'];
/** The API reference's `ProtocolWindow` schema */
export type ProtocolWindow = components['schemas']['ProtocolWindow'];
/** The API reference's `PublicLink` schema */
export type PublicLink = components['schemas']['PublicLink'];
/** The API reference's `PublicRecordState` schema */
export type PublicRecordState = components['schemas']['PublicRecordState'];
/** The API reference's `PublicRecordUpdate` schema */
export type PublicRecordUpdate = components['schemas']['PublicRecordUpdate'];
/** The API reference's `Quota` schema */
export type Quota = components['schemas']['Quota'];
/** The API reference's `ReauthenticateRequest` schema */
export type ReauthenticateRequest = components['schemas']['ReauthenticateRequest'];
/** The API reference's `Reauthenticated` schema */
export type Reauthenticated = components['schemas']['Reauthenticated'];
/** The API reference's `RefreshRequest` schema */
export type RefreshRequest = components['schemas']['RefreshRequest'];
/** The API reference's `RegisterRequest` schema */
export type RegisterRequest = components['schemas']['RegisterRequest'];
/** The API reference's `RevokedTokens` schema */
export type RevokedTokens = components['schemas']['RevokedTokens'];
/** The API reference's `SecondFactorChallenge` schema */
export type SecondFactorChallenge = components['schemas']['SecondFactorChallenge'];
/** The API reference's `ServerInfo` schema */
export type ServerInfo = components['schemas']['ServerInfo'];
/** The API reference's `Session` schema */
export type Session = components['schemas']['Session'];
/** The API reference's `SessionList` schema */
export type SessionList = components['schemas']['SessionList'];
/** The API reference's `SignInMethods` schema */
export type SignInMethods = components['schemas']['SignInMethods'];
/** The API reference's `SignedIn` schema */
export type SignedIn = components['schemas']['SignedIn'];
/** The API reference's `SponsoredAccount` schema */
export type SponsoredAccount = components['schemas']['SponsoredAccount'];
/** The API reference's `SponsoredCreated` schema */
export type SponsoredCreated = components['schemas']['SponsoredCreated'];
/** The API reference's `SponsoredList` schema */
export type SponsoredList = components['schemas']['SponsoredList'];
/** The API reference's `Status` schema */
export type Status = components['schemas']['Status'];
/** The API reference's `SyncChange` schema */
export type SyncChange = components['schemas']['SyncChange'];
/** The API reference's `SyncPage` schema */
export type SyncPage = components['schemas']['SyncPage'];
/** The API reference's `TokenPair` schema */
export type TokenPair = components['schemas']['TokenPair'];
/** The API reference's `TotpCode` schema */
export type TotpCode = components['schemas']['TotpCode'];
/** The API reference's `TotpLoginRequest` schema */
export type TotpLoginRequest = components['schemas']['TotpLoginRequest'];
/** The API reference's `TotpRecoveryRequest` schema */
export type TotpRecoveryRequest = components['schemas']['TotpRecoveryRequest'];
/** The API reference's `TotpSecret` schema */
export type TotpSecret = components['schemas']['TotpSecret'];
/** The API reference's `TrashEmptied` schema */
export type TrashEmptied = components['schemas']['TrashEmptied'];
/** The API reference's `TusUpload` schema */
export type TusUpload = components['schemas']['TusUpload'];
/** The API reference's `TusUploadCreated` schema */
export type TusUploadCreated = components['schemas']['TusUploadCreated'];
/** The API reference's `UpgradeStatus` schema */
export type UpgradeStatus = components['schemas']['UpgradeStatus'];
/** The API reference's `Upload` schema */
export type Upload = components['schemas']['Upload'];
/** The API reference's `UploadCreated` schema */
export type UploadCreated = components['schemas']['UploadCreated'];
/** The API reference's `UploadParts` schema */
export type UploadParts = components['schemas']['UploadParts'];
/** The API reference's `WebFinger` schema */
export type WebFinger = components['schemas']['WebFinger'];
