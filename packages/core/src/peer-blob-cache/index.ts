export { decideSourcePeer } from './rules.js';
export { decideFederatedCache, federatedBudget } from './budget.js';
export type { FederatedCacheDecision } from './budget.js';
