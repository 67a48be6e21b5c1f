export {
  anonymousRecord,
  formatHandle,
  handleHost,
  isHandleUser,
  lookupAnswer,
  parseAcctResource,
  parseHandle,
} from './rules.js';
export type { Handle, HandleView, LookupAnswer } from './rules.js';
export { DiscoveryService } from './service.js';
export type { DiscoveryServiceDeps } from './service.js';
