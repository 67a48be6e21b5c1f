export {
  DEVICE_ID_PATTERN,
  DIRECTORY_DOMAIN,
  MAX_DIRECTORY_SEQ_STEP,
  acceptDirectory,
  decidePublication,
  directorySigningMessage,
  isDeviceActive,
  isDeviceId,
  parseDirectory,
} from './directory.js';
export type { ParsedDirectory } from './directory.js';
export { DeviceDirectoryService } from './service.js';
export type { DeviceDirectoryServiceDeps, PublishRefusal } from './service.js';
export {
  LOGOUT_ALL_DOMAIN,
  MAX_LIVE_REVOKE_ALL_CHALLENGES,
  REVOKE_ALL_CHALLENGE_TTL_S,
  RevokeAllService,
  admitRevokeAllChallenge,
  logoutAllMessage,
} from './revoke-all.js';
export type { RevokeAllServiceDeps } from './revoke-all.js';
export { isRecord, isWholeNumber } from './shape.js';
