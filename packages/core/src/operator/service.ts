import { guard } from '../errors.js';
import type { AccountRecord, AccountStore } from '../ports/account-store.js';
import type { Clock } from '../ports/clock.js';
import type { DeploymentCensus } from '../ports/deployment-census.js';
import type { IdentityLinkStore } from '../ports/identity-link-store.js';
import type { SessionLedger, SignInMethod } from '../ports/session-ledger.js';
import type { TotpStore } from '../ports/totp-store.js';
import { quotaStatus, type QuotaState } from '../quota/machine.js';
import type { QuotaService } from '../quota/service.js';
import { sessionExpiresAt, sessionStatus, type SessionPolicy } from '../session/machine.js';
import type { SessionService } from '../session/service.js';
import { censusBounds, deploymentTotals, type DeploymentTotals } from './census.js';
import { isLiveAccount } from '../account-deletion/rules.js';

export interface OperatorServiceDeps {
  readonly census: DeploymentCensus;
  readonly accounts: AccountStore & SessionLedger;
  readonly sessions: SessionService;
  readonly quota: QuotaService;
  readonly totp: Pick<TotpStore, 'findTotpEnrollment'>;
  readonly links: Pick<IdentityLinkStore, 'listLinks'>;
  readonly clock: Clock;
  readonly policy: SessionPolicy;
}

/** One row of the operator's accounts table. */
export interface AccountOverview {
  readonly id: string;
  readonly address: string | null;
  /** A sponsored account's sponsor (its uploads are charged there), with the sponsor's address. */
  readonly sponsor: { readonly id: string; readonly address: string | null } | null;
  readonly createdAt: number;
  readonly locked: boolean;
  /** The quota that decides for this account: its own, or its sponsor's when sponsored. */
  readonly quota: {
    readonly chargedTo: string;
    readonly used: number;
    readonly reserved: number;
    readonly softLimit: number | null;
    readonly hardLimit: number | null;
    readonly state: QuotaState;
  };
  readonly sessionsOpen: number;
  /** The latest last-used instant among its open sessions; null with none. */
  readonly lastUsedAt: number | null;
  readonly totp: boolean;
  /** The issuers of its OpenID links. */
  readonly openIdIssuers: readonly string[];
}

export interface OperatorSessionView {
  readonly sessionId: string;
  readonly method: SignInMethod;
  readonly createdAt: number;
  readonly lastUsedAt: number;
  readonly expiresAt: number;
}

/** Accounts are read this many at a time, so a large deployment is never held in one array of rows. */
const PAGE = 500;

/**
 * The operator's view of the deployment (the CLI's accounts, sessions, revoke-sessions, lock) and
 * the totals /metrics shows. Ending sessions goes through the session service's closeAll, the
 * credential change revoke-all makes: whatever revoke-all ends with the sessions (second-factor
 * challenges, login codes and flows started before it, and the account's sign-in tickets where
 * closeAll voids them) the operator's commands end too, with no rule of their own.
 */
export class OperatorService {
  readonly #d: OperatorServiceDeps;

  constructor(deps: OperatorServiceDeps) {
    this.#d = deps;
  }

  /** Every account, in id order, a page at a time. */
  async *accounts(): AsyncIterable<AccountOverview> {
    const addresses = new Map<string, string | null>();
    let after: string | null = null;
    for (;;) {
      const page: AccountRecord[] = await guard('error.store.unavailable', 'listing accounts', () =>
        this.#d.census.listAccounts(after, PAGE),
      );
      for (const account of page) {
        if (!isLiveAccount(account)) continue;
        addresses.set(account.id, account.address);
        yield await this.#overview(account, addresses);
      }
      if (page.length < PAGE) return;
      after = page[page.length - 1]!.id;
    }
  }

  async #overview(account: AccountRecord, addresses: Map<string, string | null>): Promise<AccountOverview> {
    const now = this.#d.clock.now();
    const [payer, open, enrollment, links] = await Promise.all([
      this.#d.quota.payerFacts(account.id, now),
      this.#d.accounts.listOpenSessions(account.id),
      this.#d.totp.findTotpEnrollment(account.id),
      this.#d.links.listLinks(account.id),
    ]);
    const live = open.filter((s) => sessionStatus(s, now, this.#d.policy) === 'open');
    const status = quotaStatus(payer.facts, now, this.#d.quota.policy.graceMs);
    const sponsorId = payer.own.sponsorId;
    let sponsor: AccountOverview['sponsor'] = null;
    if (sponsorId !== null) {
      if (!addresses.has(sponsorId))
        addresses.set(sponsorId, (await this.#d.accounts.findAccountById(sponsorId))?.address ?? null);
      sponsor = { id: sponsorId, address: addresses.get(sponsorId) ?? null };
    }
    return {
      id: account.id,
      // A sponsored account is stored with an empty address (it never signs in by one).
      address: account.address === '' ? null : account.address,
      sponsor,
      createdAt: account.createdAt,
      locked: account.lockedAt !== null,
      quota: {
        chargedTo: payer.payerId,
        used: status.used,
        reserved: status.reserved,
        softLimit: status.softLimit,
        hardLimit: status.hardLimit,
        state: status.state,
      },
      sessionsOpen: live.length,
      lastUsedAt: live.length === 0 ? null : Math.max(...live.map((s) => s.lastUsedAt)),
      totp: enrollment?.state === 'confirmed',
      openIdIssuers: [...new Set(links.map((l) => l.issuer))],
    };
  }

  /** The account's open sessions (expired ones left out), oldest first. */
  async sessions(accountId: string): Promise<OperatorSessionView[]> {
    const now = this.#d.clock.now();
    const open = await guard('error.store.unavailable', 'listing sessions', () =>
      this.#d.accounts.listOpenSessions(accountId),
    );
    return open
      .filter((s) => sessionStatus(s, now, this.#d.policy) === 'open')
      .sort((a, b) => a.createdAt - b.createdAt)
      .map((s) => ({
        sessionId: s.id,
        method: s.method ?? 'password',
        createdAt: s.createdAt,
        lastUsedAt: s.lastUsedAt,
        expiresAt: sessionExpiresAt(s, this.#d.policy),
      }));
  }

  /**
   * Ends every session of the account as revoke-all does: the next request of any of its access
   * tokens is refused and no refresh mints another. Returns how many were open.
   */
  async revokeSessions(accountId: string): Promise<{ sessionsClosed: number }> {
    return { sessionsClosed: await this.#d.sessions.closeAll(accountId) };
  }

  /**
   * Locks the account, then ends its sessions. In that order: once the lock is written no sign-in
   * opens a session (the lock is a credential change a sign-in in flight is judged against), so the
   * sessions closed next are the last.
   */
  async lock(accountId: string): Promise<{ sessionsClosed: number }> {
    await guard('error.store.unavailable', 'locking the account', () =>
      this.#d.accounts.setLocked(accountId, this.#d.clock.now()),
    );
    return this.revokeSessions(accountId);
  }

  async unlock(accountId: string): Promise<void> {
    await guard('error.store.unavailable', 'unlocking the account', () => this.#d.accounts.setLocked(accountId, null));
  }

  /** What the deployment holds, read once (the metrics refresh calls it at most once a minute). */
  async totals(): Promise<DeploymentTotals> {
    const bounds = censusBounds(this.#d.clock.now(), this.#d.policy);
    return deploymentTotals(
      await guard('error.store.unavailable', 'counting the deployment', () => this.#d.census.countDeployment(bounds)),
    );
  }
}
