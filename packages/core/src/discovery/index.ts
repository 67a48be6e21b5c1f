export {
  anonymousRecord,
  handleInService,
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
export {
  DEFAULT_LOOKUP_RATE_PER_MINUTE,
  decideLookupDraw,
  lookupBucketKey,
  lookupBudgetHolder,
} from './lookup-budget.js';
