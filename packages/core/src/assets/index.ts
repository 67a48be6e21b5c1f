export { AssetService } from './service.js';
export type { AssetServiceDeps, AssetWrite } from './service.js';
export { decideAssetTransition, dropExpired, EMPTY_TRASH_CANDIDATE_STATES } from './lifecycle.js';
export type { AssetAction, AssetLifecycleFacts, AssetTransition, AssetTransitionRefusal } from './lifecycle.js';
export { admitsMetadataEdit, decideMetadataReplace } from './metadata-edit.js';
export type { MetadataEditRefusal, MetadataReplaceFacts, MetadataReplacePlan } from './metadata-edit.js';
