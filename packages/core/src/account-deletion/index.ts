export {
  accountState,
  isLiveAccount,
  cancelledByErasure,
  decideDeletionCaller,
  planErasure,
  revokedByErasure,
} from './rules.js';
export type { ErasureFacts, ErasurePlan } from './rules.js';
export { AccountDeletionService } from './service.js';
export type { AccountDeletionServiceDeps, DeletionRefusal } from './service.js';
