export { OidcService } from './service.js';
export type { CallbackOutcome, Completion, OidcServiceDeps, StartInput } from './service.js';
export {
  FLOW_TTL_MS,
  LOGIN_CODE_TTL_MS,
  OIDC_PURPOSES,
  REAUTH_FRESH_MS,
  appVerifierMatches,
  checkReturnTo,
  decideOidcCompletion,
  decideLink,
  decideReauthentication,
  decideSignIn,
  decideUnlink,
  initialDisplayName,
  initiatorFor,
  isLive,
  nonceForState,
  verifiedAddress,
} from './rules.js';
export type { SignInDecision } from './rules.js';
