export {
  ADDRESS_KEPT,
  DEFAULT_SOURCE_FAILURES,
  SOURCE_WINDOW_MS,
  TICKET_WRONG_PASSWORDS,
  addressDecision,
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
