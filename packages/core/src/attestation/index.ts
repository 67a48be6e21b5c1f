export {
  HISTORY_DOMAIN,
  historyPreimage,
  historyHash,
  makeHistoryEntry,
  acceptsHistoryEntry,
  verifyHistory,
} from './history.js';
export type { HistoryLink } from './history.js';
export { RECEIPT_TYP, receiptClaims } from './receipt.js';
export type { ReceiptClaims, ReceiptFacts } from './receipt.js';
export { AttestationRing } from './ring.js';
export type { AttestationRingOptions, AttestationRecord, ReceiptRequest } from './ring.js';
