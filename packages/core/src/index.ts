/**
 * @strongroom/core: the pure domain of Strongroom. State machines as functions over ports; no I/O,
 * no native modules, no framework. Time and randomness come only through the Clock and Random ports.
 */
export * from './errors.js';
export type * from './ports/index.js';
export { admitAllWrites } from './ports/write-guard.js';
export * from './encoding/bytes.js';
export * from './encoding/cbor.js';
export * from './encoding/uuid.js';
export * from './encoding/time.js';
export * from './cohort/index.js';
export * from './versioning/index.js';
export * from './profile/index.js';
export * from './session/index.js';
export * from './tokens/index.js';
export * from './account/index.js';
export * from './registration/index.js';
export * from './secrets/index.js';
export * from './totp/index.js';
export * from './proofs/index.js';
export * from './devices/index.js';
export * from './albums/index.js';
export * from './write-guard/index.js';
export * from './album-upgrade/index.js';
export * from './quota/index.js';
export * from './assets/index.js';
export * from './upload/index.js';
export * from './catalog/index.js';
export * from './operations/index.js';
export * from './operator/index.js';
export * from './second-factor/index.js';
export * from './sign-in-throttle/index.js';
export * from './deployment/index.js';
export * from './oidc/index.js';
export * from './attestation/index.js';
export * from './sponsorship/index.js';
export * from './links/index.js';
export * from './blobs/index.js';
export * from './peer-blob-cache/index.js';
export * from './discovery/index.js';
export * from './federation/index.js';
export * from './peer-rate-limit/index.js';
export * from './backup/index.js';
export * from './access/index.js';
export * from './sync/index.js';
export * from './account-deletion/index.js';
