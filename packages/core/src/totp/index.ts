export { TotpService } from './service.js';
export type { TotpServiceDeps, TotpEnrollment } from './service.js';
export { TotpSecretBox } from './secret-box.js';
export {
  CHALLENGE_MAX_ATTEMPTS,
  CHALLENGE_TTL_MS,
  TOTP_ALGORITHM,
  TOTP_CODE_PATTERN,
  TOTP_DIGITS,
  TOTP_DRIFT_STEPS,
  TOTP_PERIOD_S,
  TOTP_SECRET_BYTES,
  acceptsStep,
  attemptsLeft,
  comparesCode,
  codeForStep,
  isWellFormedCode,
  judgeChallenge,
  matchCode,
  requiresChallenge,
  stepAt,
  transition,
  usableStep,
} from './machine.js';
export type { TotpEvent, TotpRefusal, TotpState, TotpTransition } from './machine.js';
