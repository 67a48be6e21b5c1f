/**
 * Password guessing (spec §3.9 to §3.11). Three counts judge a password
 * sign-in before its password is hashed:
 *
 * - per address: every address string, normalized as for lookup and whether an account holds it
 *   or not, has a record of the wrong passwords checked for it. With ten in the hour ending now,
 *   sign-in for it is refused (429) until the oldest of those ten leaves the hour, so no hour ever
 *   sees more than ten checked. Each refusal is a strike: the first answers `Retry-After: 60`,
 *   every further attempt while throttled doubles it (at most 3,600 s), and the address stays
 *   refused at least that long after the latest strike, even once the hour has room. The first
 *   attempt that is let through ends the strikes;
 * - per client address (the source): with `sourceLimit` failed sign-ins in the hour ending now,
 *   that source's password sign-ins are refused until the oldest of them leaves the hour;
 * - per sign-in ticket: a login carrying a ticket that is valid for the address is judged by the
 *   ticket's own count instead of both of the above, so a stranger guessing at the address never
 *   locks its owner out. Five wrong passwords with one ticket void it.
 *
 * Count, then compare, as for codes: a check first claims its place inside the store's
 * transaction ({@link claimPasswordCheck}), counted as wrong before the password is hashed, and a
 * right password gives the place back ({@link refundPasswordCheck}). Reading the counts, hashing,
 * then recording would let every guess sent together pass the same "not held" reading.
 */

import { sha256Hex } from '../encoding/bytes.js';
import { holds, type RowFilter } from '../filters/filter.js';

/**
 * The key a signed-in session's own password checks (reauthenticate, password change) are counted
 * under, as address and as source alike. It holds no `@`, so no address key is ever the same.
 */
export function sessionCountKey(sessionId: string): string {
  return `session:${sessionId}`;
}

/**
 * The key an address's count is stored under: the SHA-256 of its normalized key. Attempts name
 * addresses nobody holds (typos, other people's), and the store keeps no list of them in clear; an
 * address that cannot be normalized may be long, and its hash is not.
 */
export function addressCountKey(addressKey: string): string {
  return sha256Hex(addressKey);
}

/** Wrong passwords an address may have checked in an hour; the next attempt is refused. */
export const ADDRESS_FREE_WRONG = 10;
export const ADDRESS_WINDOW_MS = 60 * 60_000;
export const ADDRESS_FIRST_RETRY_MS = 60_000;
export const ADDRESS_MAX_RETRY_MS = 60 * 60_000;
export const SOURCE_WINDOW_MS = 60 * 60_000;
/** Failed sign-ins one client address may have in an hour before it is refused (SVC_SIGNIN_FAILURES_PER_SOURCE). */
export const DEFAULT_SOURCE_FAILURES = 100;
/** Wrong passwords one ticket absorbs; the one that reaches this voids it. */
export const TICKET_WRONG_PASSWORDS = 5;

/**
 * What the store keeps per address: the times of the latest wrong passwords checked for it
 * (oldest first, at most ten: older ones cannot change a decision), and the strikes of the
 * current throttled spell (attempts refused since the last one let through) with the latest's time.
 */
export interface AddressGuessState {
  readonly wrongAt: readonly number[];
  readonly strikes: number;
  readonly lastStrikeAt: number | null;
}

/** The failed sign-ins recently made from one client address, oldest first (at most the limit). */
export interface SourceFailureState {
  readonly failedAt: readonly number[];
}

/** A sign-in ticket as stored: only its hash, its account and its own count. */
export interface SignInTicketRecord {
  readonly ticketHash: string;
  readonly accountId: string;
  readonly issuedAt: number;
  readonly expiresAt: number;
  /**
   * The account's credentials stamp (`credentialsChangedAt`) the sign-in that issued the ticket was
   * judged under; the ticket holds only while the account's stamp is still this one.
   */
  readonly credentialsAt: number | null;
  readonly wrongPasswords: number;
}

/** What the ticket's account says about it, read in the same transaction. */
export interface TicketAccount {
  readonly addressKey: string | null;
  readonly credentialsChangedAt: number | null;
  readonly lockedAt: number | null;
}

/** One password check asking to go ahead. */
export interface PasswordCheckClaim {
  /** The normalized address's lookup key; the per-address count is kept under it. */
  readonly addressKey: string;
  /** The key an account stored before the current normalization would hold (a ticket may name either). */
  readonly legacyKey: string;
  /** The client address's key ({@link sourceKey}). */
  readonly sourceKey: string;
  /** The hash of the presented ticket, or null. */
  readonly ticketHash: string | null;
  readonly at: number;
  readonly sourceLimit: number;
}

/** The facts a claim is decided on, read by the store under its transaction. */
export interface PasswordCheckFacts {
  readonly address: AddressGuessState | null;
  readonly source: SourceFailureState | null;
  readonly ticket: { readonly record: SignInTicketRecord; readonly account: TicketAccount | null } | null;
}

/** Which count a check was admitted by, and so which count a right password refunds. */
export type CheckedBy = 'ticket' | 'address';

export type PasswordCheckAdmission =
  | { readonly admitted: true; readonly by: CheckedBy }
  | { readonly admitted: false; readonly retryAfterS: number; readonly heldBy: 'address' | 'source' };

/** What the store writes after a claim or refund; an absent field is left as it was. */
export interface PasswordCheckWrites {
  readonly address?: AddressGuessState;
  readonly source?: SourceFailureState;
  readonly ticketWrongPasswords?: number;
}

/** A ticket lapses at its expiry (parameter `now`): from then on it judges no sign-in. */
export const SIGN_IN_TICKET_LAPSED: RowFilter<'expiresAt'> = [{ op: '<=', field: 'expiresAt', param: 'now' }];

/**
 * The tickets a new ticket's issuance drops (parameters `accountId`, the new ticket's, and `now`,
 * its issuance): the account's lapsed ones, so they do not pile up.
 */
export const SIGN_IN_TICKETS_DROPPED: RowFilter<'accountId' | 'expiresAt'> = [
  { op: '=', field: 'accountId', param: 'accountId' },
  ...SIGN_IN_TICKET_LAPSED,
];

/** Whether storing `issued` drops this ticket: what a store's statement applies row by row. */
export function droppedByIssuance(
  ticket: Pick<SignInTicketRecord, 'accountId' | 'expiresAt'>,
  issued: Pick<SignInTicketRecord, 'accountId' | 'issuedAt'>,
): boolean {
  return holds(SIGN_IN_TICKETS_DROPPED, ticket, { accountId: issued.accountId, now: issued.issuedAt });
}

/**
 * Whether a presented ticket judges a login for the address in `claim`: it names an account that
 * holds this address, it is not expired, its count is below five, and the account's credentials
 * did not change since the sign-in that issued it (a password change, revoke-all, recovery and an
 * operator lock all move that stamp, so each ends every earlier ticket of the account, whatever
 * the clocks of the processes involved say).
 */
export function ticketHolds(
  ticket: PasswordCheckFacts['ticket'],
  claim: Pick<PasswordCheckClaim, 'addressKey' | 'legacyKey' | 'at'>,
): boolean {
  if (ticket === null || ticket.account === null) return false;
  const { record, account } = ticket;
  if (
    account.addressKey === null ||
    (account.addressKey !== claim.addressKey && account.addressKey !== claim.legacyKey)
  )
    return false;
  if (account.lockedAt !== null) return false;
  if (holds(SIGN_IN_TICKET_LAPSED, record, { now: claim.at })) return false;
  if (record.wrongPasswords >= TICKET_WRONG_PASSWORDS) return false;
  return account.credentialsChangedAt === record.credentialsAt;
}

/** The Retry-After of the n-th strike (n >= 1): a minute, doubling per strike, at most an hour. */
export function strikeDelayMs(strikes: number): number {
  return Math.min(ADDRESS_FIRST_RETRY_MS * 2 ** Math.max(0, strikes - 1), ADDRESS_MAX_RETRY_MS);
}

/** The address's wrong passwords in the hour ending at `now`, oldest first. */
function recentWrong(state: AddressGuessState | null, now: number): number[] {
  return (state?.wrongAt ?? []).filter((t) => t > now - ADDRESS_WINDOW_MS).sort((a, b) => a - b);
}

/**
 * Whether sign-in for the address is refused at `now`: while its last ten wrong passwords all lie
 * in the hour ending now, or within the delay of its latest strike.
 */
export function addressHeld(state: AddressGuessState | null, now: number): boolean {
  const recent = recentWrong(state, now);
  if (recent.length >= ADDRESS_FREE_WRONG) return true;
  return (
    state !== null &&
    state.strikes > 0 &&
    state.lastStrikeAt !== null &&
    now < state.lastStrikeAt + strikeDelayMs(state.strikes)
  );
}

/** The address's record after one more refused attempt at `now`, and the Retry-After (seconds) it answers. */
export function recordStrike(
  state: AddressGuessState | null,
  now: number,
): { state: AddressGuessState; retryAfterS: number } {
  const strikes = (state?.strikes ?? 0) + 1;
  return {
    state: { wrongAt: recentWrong(state, now), strikes, lastStrikeAt: now },
    retryAfterS: strikeDelayMs(strikes) / 1000,
  };
}

/** The address's record after an attempt let through at `now`, counted as wrong until refunded: the strikes end. */
export function recordWrongPassword(state: AddressGuessState | null, now: number): AddressGuessState {
  const recent = recentWrong(state, now);
  recent.push(now);
  return { wrongAt: recent.slice(-ADDRESS_FREE_WRONG), strikes: 0, lastStrikeAt: null };
}

/** The source's failures in the hour ending at `now`, oldest first. */
function recentFailures(state: SourceFailureState | null, now: number): number[] {
  return (state?.failedAt ?? []).filter((t) => t > now - SOURCE_WINDOW_MS).sort((a, b) => a - b);
}

/**
 * The per-source hold at `now`: with `limit` failures in the hour, refused until the oldest one
 * that keeps the count at the limit leaves the window.
 */
export function sourceDecision(
  state: SourceFailureState | null,
  now: number,
  limit: number,
): { held: false } | { held: true; retryAfterS: number } {
  const recent = recentFailures(state, now);
  if (recent.length < limit) return { held: false };
  const leaves = recent[recent.length - limit]! + SOURCE_WINDOW_MS;
  return { held: true, retryAfterS: Math.max(1, Math.ceil((leaves - now) / 1000)) };
}

/** The source's record after one more failure at `now`: older than the hour dropped, at most `limit` kept. */
export function recordSourceFailure(state: SourceFailureState | null, now: number, limit: number): SourceFailureState {
  const recent = recentFailures(state, now);
  recent.push(now);
  return { failedAt: recent.slice(-Math.max(1, limit)) };
}

function withoutOne(times: readonly number[], at: number): number[] {
  const out = [...times];
  const i = out.lastIndexOf(at);
  if (i >= 0) out.splice(i, 1);
  return out;
}

/**
 * The claim of one password check, decided on the facts the store read under its transaction.
 * With a ticket that holds for the address, the ticket's count alone decides (it is always
 * admitted while it holds) and the check counts on the ticket. Otherwise the address may refuse it
 * (a strike is written), then the source (nothing is written); admitted, it counts on both.
 */
export function claimPasswordCheck(
  facts: PasswordCheckFacts,
  claim: PasswordCheckClaim,
): { admission: PasswordCheckAdmission; writes: PasswordCheckWrites } {
  if (ticketHolds(facts.ticket, claim)) {
    return {
      admission: { admitted: true, by: 'ticket' },
      writes: { ticketWrongPasswords: facts.ticket!.record.wrongPasswords + 1 },
    };
  }
  if (addressHeld(facts.address, claim.at)) {
    const strike = recordStrike(facts.address, claim.at);
    return {
      admission: { admitted: false, retryAfterS: strike.retryAfterS, heldBy: 'address' },
      writes: { address: strike.state },
    };
  }
  const source = sourceDecision(facts.source, claim.at, claim.sourceLimit);
  if (source.held)
    return { admission: { admitted: false, retryAfterS: source.retryAfterS, heldBy: 'source' }, writes: {} };
  return {
    admission: { admitted: true, by: 'address' },
    writes: {
      address: recordWrongPassword(facts.address, claim.at),
      source: recordSourceFailure(facts.source, claim.at, claim.sourceLimit),
    },
  };
}

/**
 * A check claimed at `claim.at` found the right password (or was never compared): its place is
 * given back on the count that admitted it. Only wrong passwords count.
 */
export function refundPasswordCheck(
  facts: PasswordCheckFacts,
  claim: PasswordCheckClaim,
  by: CheckedBy,
): PasswordCheckWrites {
  if (by === 'ticket') {
    if (facts.ticket === null) return {};
    return { ticketWrongPasswords: Math.max(0, facts.ticket.record.wrongPasswords - 1) };
  }
  return {
    ...(facts.address !== null
      ? { address: { ...facts.address, wrongAt: withoutOne(facts.address.wrongAt, claim.at) } }
      : {}),
    ...(facts.source !== null ? { source: { failedAt: withoutOne(facts.source.failedAt, claim.at) } } : {}),
  };
}
