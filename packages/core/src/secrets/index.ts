export { SecretBox, isSealed } from './secret-box.js';
export type { SecretSealer } from './secret-box.js';
export { openKeySeed, sealKeySeed, sealRawKeys, keySealContext, type SealedKeyKind } from './key-seal.js';
