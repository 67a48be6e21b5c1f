/** Node-specific adapters that are not a database: argon2id hashing, the system clock and CSPRNG, logging. */
export { Argon2Hasher, OWASP_ARGON2ID } from './argon2-hasher.js';
export type { Argon2Options } from './argon2-hasher.js';
export { systemClock, cryptoRandom, JsonLogger } from './system.js';
export { FsBlobStore, writeAll } from './fs-blob-store.js';
// S3BlobStore is imported from '@strongroom/adapters-node/s3': the AWS SDK loads only where a bucket is configured.
export { OidcRelyingParty } from './oidc-relying-party.js';
export type { OidcRelyingPartyOptions } from './oidc-relying-party.js';
export { HttpPeers } from './http-peers.js';
export type { HttpPeersOptions } from './http-peers.js';
export { nodeEd25519Signer, sodiumEd25519Signer, platformEd25519Signer } from './ed25519-signer.js';
export { NodeSecretBox } from './secret-box.js';
export { takeFileLock, LockHeldError } from './file-lock.js';
