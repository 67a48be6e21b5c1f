export {
  DEFAULT_QUOTA_POLICY,
  FOLLOW_UP_UPLOAD_KINDS,
  QUOTA_ALERTS,
  QUOTA_STATES,
  admitWrite,
  effectiveLimits,
  isFollowUp,
  nextHardSince,
  quotaState,
  quotaStatus,
  usedBytes,
} from './machine.js';
export type {
  LedgerFacts,
  QuotaAlert,
  QuotaLimits,
  QuotaPolicy,
  QuotaRefusal,
  QuotaState,
  QuotaStatus,
  WriteKind,
  WriteRequest,
} from './machine.js';
export { QuotaService } from './service.js';
export type { LedgerReport, QuotaServiceDeps, SweepReport } from './service.js';
export { emptyLedgerRecord, ledgerFacts, ledgerRecordWith, payerIdOf, settledHardSince } from './ledger-rules.js';
