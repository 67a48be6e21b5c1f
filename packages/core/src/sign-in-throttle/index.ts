export {
  ADDRESS_FIRST_RETRY_MS,
  ADDRESS_FREE_WRONG,
  ADDRESS_MAX_RETRY_MS,
  ADDRESS_WINDOW_MS,
  DEFAULT_SOURCE_FAILURES,
  SOURCE_WINDOW_MS,
  TICKET_WRONG_PASSWORDS,
  addressCountKey,
  addressHeld,
  recordStrike,
  strikeDelayMs,
  claimPasswordCheck,
  recordSourceFailure,
  recordWrongPassword,
  refundPasswordCheck,
  sourceDecision,
  ticketHolds,
} from './rules.js';
export type {
  AddressGuessState,
  CheckedBy,
  PasswordCheckAdmission,
  PasswordCheckClaim,
  PasswordCheckFacts,
  PasswordCheckWrites,
  SignInTicketRecord,
  SourceFailureState,
  TicketAccount,
} from './rules.js';
export { clientAddress, inCidr, parseCidr, parseCidrList, parseIp, sourceKey } from './client-address.js';
export type { Cidr, IpBytes } from './client-address.js';
export { TICKET_BYTES, newSignInTicket, signInTicketHash } from './ticket.js';
