export { cachedFromPeer, decideIntake } from './rules.js';
export { FederatedCacheService } from './service.js';
export type { FederatedCacheServiceDeps, OpenFederated } from './service.js';
