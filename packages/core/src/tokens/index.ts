export { KeyRing } from './key-ring.js';
export type { KeyRingOptions, PublicJwk } from './key-ring.js';
export { AccessTokens, ACCESS_TOKEN_TTL_S } from './access-token.js';
export type { AccessTokenClaims, VerifiedAccessToken, AccessTokensOptions } from './access-token.js';
export { signCompactJws, webCryptoSigner } from './signer.js';
