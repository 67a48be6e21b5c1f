import { mayReach } from '../access/rules.js';
import { fromBase64url, sha256Hex, toBase64url } from '../encoding/bytes.js';
import { uuidv7 } from '../encoding/uuid.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { CohortMap, CohortRecord } from '../ports/cohort-map.js';
import type { Logger } from '../ports/logger.js';
import type { Random } from '../ports/random.js';
import type { AccountSummary, SessionLedger, SessionRecord, SignInMethod } from '../ports/session-ledger.js';
import type { SignInThrottleStore } from '../ports/sign-in-throttle.js';
import { newSignInTicket } from '../sign-in-throttle/ticket.js';
import { ACCESS_TOKEN_TTL_S, type AccessTokens } from '../tokens/access-token.js';
import { decideRecentAuthentication, type RecentAuthAction } from './recent-auth.js';
import {
  decideAccess,
  decideIssuance,
  needsTouch,
  sessionExpiresAt,
  sessionStatus,
  type SessionPolicy,
} from './machine.js';

export interface SessionServiceDeps {
  readonly ledger: SessionLedger;
  readonly cohorts: CohortMap;
  readonly tokens: AccessTokens;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly policy: SessionPolicy;
  /** Where sign-in tickets are kept; without it a sign-in hands none out. */
  readonly tickets?: Pick<SignInThrottleStore, 'issueSignInTicket' | 'voidSignInTickets' | 'voidAllSignInTickets'>;
}

/** What register, login, verify-totp and password change hand back. */
export interface TokenPair {
  readonly sessionId: string;
  readonly sessionToken: string;
  readonly accessToken: string;
  readonly expiresIn: number;
  /**
   * Handed out by every sign-in (not by a password change): the owner's exemption from the
   * per-address and per-source password throttles on its next logins (sign-in-throttle/rules.ts).
   */
  readonly signInTicket?: string;
}

export interface AccessGrant {
  readonly accessToken: string;
  readonly expiresIn: number;
}

/** The caller behind a valid access token. */
export interface Principal {
  readonly accountId: string;
  readonly sessionId: string;
  /**
   * The account as read together with the session when `authenticate` produced this principal, so
   * a request that only shows the account (the profile) needs no second read.
   */
  readonly account?: AccountSummary;
  /**
   * Set when the request acts as a sponsored account (X-Svc-Act-As): `accountId` is then the
   * sponsored account and this is the owner whose session and devices stand behind the request.
   */
  readonly actingOwnerId?: string;
  /** Set for a guest holding a one-drop upload token: the only upload session it may touch. */
  readonly guestUploadId?: string;
}

export interface SessionView {
  readonly sessionId: string;
  readonly createdAt: number;
  readonly lastUsedAt: number;
  readonly expiresAt: number;
  readonly cohortHash: string | null;
  readonly current: boolean;
  readonly method: SignInMethod;
}

/** A fresh 128-bit session token and the hash that is all the ledger ever sees. */
export function newSessionToken(random: Random): { token: string; tokenHash: string } {
  const bytes = random.bytes(16);
  return { token: toBase64url(bytes), tokenHash: sha256Hex(bytes) };
}

/** The ledger key of a presented token; null when it cannot be one of ours. */
export function sessionTokenHash(token: string): string | null {
  const bytes = fromBase64url(token);
  return bytes !== null && bytes.length === 16 ? sha256Hex(bytes) : null;
}

/**
 * The session lifecycle (spec §4.4 to §4.10) over the ledger. Every method reads the clock once and
 * hands the decision to the pure machine.
 */
export class SessionService {
  readonly #d: SessionServiceDeps;

  constructor(deps: SessionServiceDeps) {
    this.#d = deps;
  }

  get policy(): SessionPolicy {
    return this.#d.policy;
  }

  /**
   * Opens a sign-in's session and returns its token pair; the cohort is recorded after, best effort.
   * `account` is the account as the sign-in judged its credential: the session opens only while
   * its credentials have not changed since (SessionLedger.openSession). Null when they have: a
   * password change, revoke-all, recovery or lock committed during the sign-in, and nothing opened.
   */
  async open(
    account: { readonly id: string; readonly credentialsChangedAt: number | null },
    options: { cohortHash: string | null; method?: SignInMethod },
  ): Promise<TokenPair | null> {
    const accountId = account.id;
    const now = this.#d.clock.now();
    const { token, tokenHash } = newSessionToken(this.#d.random);
    const session: SessionRecord = {
      id: uuidv7(now, this.#d.random.bytes(10)),
      accountId,
      tokenHash,
      cohortHash: options.cohortHash,
      createdAt: now,
      refreshedAt: now,
      lastUsedAt: now,
      accessFloor: now,
      closedAt: null,
      authenticatedAt: now,
      method: options.method ?? 'password',
    };
    const opened = await guard('error.store.unavailable', 'opening a session', () =>
      this.#d.ledger.openSession(session, account.credentialsChangedAt),
    );
    if (!opened) return null;
    await this.#recordCohort(accountId, options.cohortHash, now);
    const signInTicket = await this.#issueTicket(accountId, account.credentialsChangedAt, now);
    const access = await this.#d.tokens.issue(accountId, session.id);
    return {
      sessionId: session.id,
      sessionToken: token,
      accessToken: access.token,
      expiresIn: ACCESS_TOKEN_TTL_S,
      ...signInTicket,
    };
  }

  /**
   * Opens a session through `insert`, a store call that inserts it together with another change in
   * one atomic step (second-factor recovery removes the factor in the same step). Null when
   * `insert` declined, and then nothing was opened.
   */
  async openWith(
    accountId: string,
    options: {
      cohortHash: string | null /** The account's credentials stamp once `insert` committed. */;
      credentialsAt: (session: SessionRecord) => number | null;
    },
    insert: (session: SessionRecord) => Promise<boolean>,
  ): Promise<TokenPair | null> {
    const now = this.#d.clock.now();
    const { token, tokenHash } = newSessionToken(this.#d.random);
    const session: SessionRecord = {
      id: uuidv7(now, this.#d.random.bytes(10)),
      accountId,
      tokenHash,
      cohortHash: options.cohortHash,
      createdAt: now,
      refreshedAt: now,
      lastUsedAt: now,
      accessFloor: now,
      closedAt: null,
      authenticatedAt: now,
    };
    const inserted = await guard('error.store.unavailable', 'opening a session', () => insert(session));
    if (!inserted) return null;
    await this.#recordCohort(accountId, options.cohortHash, now);
    const signInTicket = await this.#issueTicket(accountId, options.credentialsAt(session), now);
    const access = await this.#d.tokens.issue(accountId, session.id);
    return {
      sessionId: session.id,
      sessionToken: token,
      accessToken: access.token,
      expiresIn: ACCESS_TOKEN_TTL_S,
      ...signInTicket,
    };
  }

  /** A new sign-in ticket for the account, valid as long as a session may live (SVC_SESSION_MAX_S). */
  async #issueTicket(accountId: string, credentialsAt: number | null, now: number): Promise<{ signInTicket?: string }> {
    const store = this.#d.tickets;
    if (store === undefined) return {};
    const { ticket, ticketHash } = newSignInTicket(this.#d.random);
    await guard('error.store.unavailable', 'issuing a sign-in ticket', () =>
      store.issueSignInTicket({
        ticketHash,
        accountId,
        issuedAt: now,
        expiresAt: now + this.#d.policy.maxMs,
        credentialsAt,
        wrongPasswords: 0,
      }),
    );
    return { signInTicket: ticket };
  }

  /** Advisory: a failure here is logged and dropped, never failing the sign-in. */
  async #recordCohort(accountId: string, cohortHash: string | null, now: number): Promise<void> {
    if (cohortHash === null) return;
    try {
      await this.#d.cohorts.recordCohort(accountId, cohortHash, now);
    } catch (cause) {
      this.#d.logger.warn('cohort.record_failed', {
        account_id: accountId,
        error: String((cause as Error)?.message ?? cause),
      });
    }
  }

  /** Mints an access token against a session token; restarts the idle clock. */
  async refresh(sessionToken: string): Promise<Result<AccessGrant, 'error.auth.session_invalid'>> {
    const now = this.#d.clock.now();
    const hash = sessionTokenHash(sessionToken);
    if (hash === null) return refuse('error.auth.session_invalid', 'The session token is not valid.');
    const found = await guard('error.auth.unavailable', 'reading the session ledger', () =>
      this.#d.ledger.findSessionByTokenHash(hash),
    );
    const decision = decideIssuance(found, now, this.#d.policy);
    if (!decision.ok) return decision;
    // Issued as of the recorded instant, so that a password change committing after the record
    // (its access floor passes it) refuses this token as it refuses every earlier one; and never
    // before the floor the session was read with (a change in this very millisecond sets it ahead).
    const at = Math.max(now, decision.value.accessFloor);
    // Last-used is written at most once a minute, by an issuance as by any request (spec §4.9).
    const recorded = await guard('error.auth.unavailable', 'recording issuance', () =>
      this.#d.ledger.recordIssuance(decision.value.id, hash, at, at - this.#d.policy.touchIntervalMs),
    );
    // Closed, or re-keyed by a password change, between the read and the write: no token for it.
    if (!recorded) return refuse('error.auth.session_invalid', 'The session is unknown, closed or expired.');
    const access = await this.#d.tokens.issue(decision.value.accountId, decision.value.id, at);
    return ok({ accessToken: access.token, expiresIn: ACCESS_TOKEN_TTL_S });
  }

  /**
   * Resolves an access token to its caller: one signature check (cached) and one ledger read, every
   * time, so a revoked session is refused on its very next request. An unreadable ledger throws
   * `error.auth.unavailable` (fail closed).
   */
  async authenticate(accessToken: string): Promise<Result<Principal, 'error.auth.session_invalid'>> {
    const verified = await this.#d.tokens.verify(accessToken);
    if (verified === null) return refuse('error.auth.session_invalid', 'The access token is not valid.');
    const access = await guard('error.auth.unavailable', 'reading the session ledger', () =>
      this.#d.ledger.findSessionAccess(verified.sessionId),
    );
    const decision = decideAccess(access, verified);
    if (!decision.ok) return decision;
    const now = this.#d.clock.now();
    if (needsTouch(decision.value, now, this.#d.policy)) {
      // Coalesced bookkeeping: losing one write costs a stale "last used", never the request.
      await this.#d.ledger
        .touchSession(verified.sessionId, now, now - this.#d.policy.touchIntervalMs)
        .catch((cause: unknown) =>
          this.#d.logger.warn('session.touch_failed', { error: String((cause as Error)?.message ?? cause) }),
        );
    }
    return ok({ accountId: verified.accountId, sessionId: verified.sessionId, account: decision.value.account });
  }

  /** Closes one session of the caller's account. Any open session of the account may do it. */
  async revoke(principal: Principal, sessionId: string): Promise<Result<void, 'error.not_found'>> {
    const session = await guard('error.store.unavailable', 'reading a session', () =>
      this.#d.ledger.findSessionById(sessionId),
    );
    if (
      session === null ||
      !mayReach(principal, { kind: 'session', id: session.id, accountId: session.accountId }, 'write')
    ) {
      return refuse('error.not_found', 'No such open session on this account.');
    }
    // The ledger's account match restates the session's own account: a session never changes hands.
    const closed = await guard('error.store.unavailable', 'closing a session', () =>
      this.#d.ledger.closeSession(session.accountId, sessionId, this.#d.clock.now()),
    );
    return closed ? ok(undefined) : refuse('error.not_found', 'No such open session on this account.');
  }

  /**
   * The gate of every change listed in RECENT_AUTH_ACTIONS: the caller's session must have proved a
   * credential within the window. `change` names which one (the list is the rule; the name is for
   * the log and keeps callers to the list).
   */
  async requireRecentAuthentication(
    principal: Principal,
    change: RecentAuthAction,
  ): Promise<Result<void, 'error.auth.reauthentication_required'>> {
    const session = await guard('error.auth.unavailable', 'reading the session ledger', () =>
      this.#d.ledger.findSessionById(principal.sessionId),
    );
    const open =
      session !== null &&
      session.closedAt === null &&
      session.accountId === (principal.actingOwnerId ?? principal.accountId);
    const decision = decideRecentAuthentication(
      open ? session.authenticatedAt : null,
      this.#d.clock.now(),
      this.#d.policy.reauthWindowMs,
    );
    if (!decision.ok) this.#d.logger.info('session.reauthentication_required', { change });
    return decision;
  }

  /** The caller proved a credential again (reauthenticate): its session may change sign-in methods for a while. */
  async recordAuthentication(principal: Principal, at: number): Promise<Result<void, 'error.auth.session_invalid'>> {
    const recorded = await guard('error.store.unavailable', 'recording a reauthentication', () =>
      this.#d.ledger.recordAuthentication(principal.sessionId, Math.min(at, this.#d.clock.now())),
    );
    return recorded ? ok(undefined) : refuse('error.auth.session_invalid', 'The session is no longer open.');
  }

  /**
   * Closes every session of the account (the revoke-all ceremony calls this after its proof) and
   * voids its sign-in tickets. The credentials stamp the close moves already ends them; voiding
   * also ends one issued within the same millisecond, when the stamp would read the same.
   */
  async closeAll(accountId: string): Promise<number> {
    const closed = await guard('error.store.unavailable', 'closing sessions', () =>
      this.#d.ledger.closeAllSessions(accountId, this.#d.clock.now()),
    );
    await this.voidTickets(accountId);
    return closed;
  }

  /** Voids every sign-in ticket of the account (password change, revoke-all, lock; deletion and restore call it too). */
  async voidTickets(accountId: string): Promise<void> {
    const store = this.#d.tickets;
    if (store !== undefined)
      await guard('error.store.unavailable', 'voiding sign-in tickets', () => store.voidSignInTickets(accountId));
  }

  /** Voids every sign-in ticket of every account (a restore closes them all). */
  async voidAllTickets(): Promise<void> {
    const store = this.#d.tickets;
    if (store !== undefined)
      await guard('error.store.unavailable', 'voiding sign-in tickets', () => store.voidAllSignInTickets());
  }

  /** Live sessions (expired ones left out) and the account's cohort map. */
  async list(principal: Principal): Promise<{ sessions: SessionView[]; cohorts: CohortRecord[] }> {
    const now = this.#d.clock.now();
    const [open, cohorts] = await guard('error.store.unavailable', 'listing sessions', () =>
      Promise.all([
        this.#d.ledger.listOpenSessions(principal.accountId),
        this.#d.cohorts.listCohorts(principal.accountId),
      ]),
    );
    const sessions = open
      .filter((s) => sessionStatus(s, now, this.#d.policy) === 'open')
      .sort((a, b) => a.createdAt - b.createdAt)
      .map((s) => ({
        sessionId: s.id,
        createdAt: s.createdAt,
        lastUsedAt: s.lastUsedAt,
        expiresAt: sessionExpiresAt(s, this.#d.policy),
        cohortHash: s.cohortHash,
        current: s.id === principal.sessionId,
        method: s.method ?? 'password',
      }));
    return { sessions, cohorts };
  }

  /**
   * Whether an access token may be minted for this session now (spec §4.8: both expiries are
   * judged at issuance). Asked before a change whose answer is an issuance (a password change), so
   * an expired session changes nothing.
   */
  async issuable(sessionId: string): Promise<Result<SessionRecord, 'error.auth.session_invalid'>> {
    const session = await guard('error.auth.unavailable', 'reading the session ledger', () =>
      this.#d.ledger.findSessionById(sessionId),
    );
    return decideIssuance(session, this.#d.clock.now(), this.#d.policy);
  }

  /**
   * Mints an access token for a session whose token is now `tokenHash` (after a password change
   * re-keyed it), as a refresh does: judged by the same expiries, and it restarts the idle clock.
   */
  async issueFor(
    accountId: string,
    sessionId: string,
    tokenHash: string,
  ): Promise<Result<AccessGrant, 'error.auth.session_invalid'>> {
    const decision = await this.issuable(sessionId);
    if (!decision.ok) return decision;
    // At or after the session's access floor, which a password change may set a millisecond ahead
    // of the clock (past a refresh recorded in the same millisecond): the caller's new token works.
    const at = Math.max(this.#d.clock.now(), decision.value.accessFloor);
    const recorded = await guard('error.auth.unavailable', 'recording issuance', () =>
      this.#d.ledger.recordIssuance(sessionId, tokenHash, at, at - this.#d.policy.touchIntervalMs),
    );
    if (!recorded) return refuse('error.auth.session_invalid', 'The session is unknown, closed or expired.');
    const access = await this.#d.tokens.issue(accountId, sessionId, at);
    return ok({ accessToken: access.token, expiresIn: ACCESS_TOKEN_TTL_S });
  }
}
