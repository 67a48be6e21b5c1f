/**
 * The model-based properties (fast-check `fc.commands` against the real core), shared so every
 * adapter runs the same ones: `@strongroom/core/testing/models`. They need fast-check (an optional
 * peer dependency of core); the fakes they run on are in `@strongroom/core/testing`.
 */
export { totpModelProperty } from './totp-model.js';
export { sessionModelProperty } from './session-model.js';
export { quotaModelProperty } from './quota-model.js';
export { upgradeModelProperty } from './upgrade-model.js';
export { totpThrottleModelProperty } from './throttle-model.js';
export { oidcModelProperty } from './oidc-model.js';
export { recordsModelProperty } from './records-model.js';
export { peerBucketModelProperty } from './peer-bucket-model.js';
export { leaseModelProperty } from './lease-model.js';
export { registrationModelProperty } from './registration-model.js';
export { syncModelProperty } from './sync-model.js';
export { deletionModelProperty } from './deletion-model.js';
export { signInThrottleModelProperty } from './sign-in-model.js';
export { resumableModelProperty } from './resumable-model.js';
