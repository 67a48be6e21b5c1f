export {
  allowlistCandidates,
  allowlistEntry,
  decideRegistration,
  isRegistrationMode,
  REGISTRATION_MODES,
} from './rules.js';
export type { RegistrationMode } from './rules.js';
export { RegistrationGate } from './service.js';
export type { RegistrationGateDeps } from './service.js';
