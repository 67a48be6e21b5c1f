export {
  CAPABILITY_MAX_TTL_S,
  CAPABILITY_MAX_SKEW_S,
  CAPABILITY_SCOPE,
  CAPABILITY_TTL_S,
  CAPABILITY_TYP,
  capabilityClaims,
  peekCapability,
  signCapability,
  verifyCapability,
} from './capability.js';
export type { CapabilityClaims, CapabilityRefusal, VerifiedCapability } from './capability.js';
export { decidePeerAnswer } from './answer.js';
export { PeerUnavailableError } from './peer-error.js';
export { FederationService } from './service.js';
export type { CapabilityCheck, FederationServiceDeps } from './service.js';
export { REVOCATION_WINDOW_MS, REVOCATION_WINDOW_S, inRevocationWindow, revocationCutoff } from './revocation.js';
