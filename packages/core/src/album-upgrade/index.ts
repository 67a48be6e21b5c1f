export {
  DEFAULT_UPGRADE_DEADLINE_S,
  MAX_UPGRADE_DEADLINE_S,
  decideAbort,
  decideManifestIntent,
  decideProposal,
  decideQuiescence,
  liveUpgrade,
  upgradeExpiresAt,
  upgradeStatus,
  withUpgrade,
} from './server.js';
export type { UpgradePhase, UpgradeStatus } from './server.js';
export { UPGRADE_INTENT_DOMAIN, parseSignedUpgradeIntent, upgradeIntentMessage, verifyHybrid } from './intent.js';
export type { SignedUpgradeIntent, UpgradeIntent } from './intent.js';
export { UpgradeService } from './service.js';
export type { ProposeRefusal, UpgradeCaller, UpgradeServiceDeps } from './service.js';
export { frozenStateHash, initialMemberState, memberTransition } from './member.js';
export type {
  ForkRecord,
  FrozenAlbumState,
  MemberEffect,
  MemberEvent,
  MemberIntent,
  MemberPhase,
  MemberState,
  OutgoingWrite,
  QueuedWrite,
  UpgradedFrom,
} from './member.js';
export { MemberUpgradeService } from './member-service.js';
export type { MemberUpgradeServiceDeps } from './member-service.js';
