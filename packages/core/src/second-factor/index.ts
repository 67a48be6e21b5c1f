export {
  NO_WRONG_CODES,
  THROTTLE_FIRST_DELAY_MS,
  THROTTLE_FREE_WRONG_CODES,
  THROTTLE_KEPT,
  THROTTLE_MAX_DELAY_MS,
  THROTTLE_WINDOW_MS,
  claimCodeCheck,
  heldUntil,
  recordWrongCode,
  refundCodeCheck,
  throttleDecision,
} from './throttle.js';
export type { CodeCheckAdmission, TotpThrottleState } from './throttle.js';
export { TOTP_RECOVERY_DOMAIN, TotpRecoveryService, totpRecoveryMessage } from './recovery.js';
export type { TotpRecoveryServiceDeps } from './recovery.js';
