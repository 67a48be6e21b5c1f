export {
  DEFAULT_UPGRADE_DEADLINE_S,
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
