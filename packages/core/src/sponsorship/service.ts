import { uuidv7 } from '../encoding/uuid.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AccountStore } from '../ports/account-store.js';
import type { Clock } from '../ports/clock.js';
import type { Random } from '../ports/random.js';
import type { SponsoredRecord, SponsorshipStore } from '../ports/sponsorship-store.js';
import type { QuotaService } from '../quota/service.js';
import type { Principal, SessionService } from '../session/service.js';
import { decideActAs, decideOwnerRemoval, decideSponsor } from './rules.js';

export interface SponsorshipServiceDeps {
  readonly store: SponsorshipStore;
  readonly accounts: AccountStore;
  readonly quota: QuotaService;
  readonly clock: Clock;
  readonly random: Random;
  /** Adding an owner lets another account in for good: it needs a recent credential proof. */
  readonly sessions: Pick<SessionService, 'requireRecentAuthentication'>;
}

type Caller = Pick<Principal, 'accountId' | 'actingOwnerId'>;
const STORE = 'error.store.unavailable' as const;

/** The placeholder address key of a sponsored account: never an e-mail address, so never a login. */
export const sponsoredAddressKey = (accountId: string): string => `sponsored:${accountId}`;

/**
 * Sponsored accounts (spec §8.2 to §8.4): created by a registered account, which pays for
 * them; their owners act as them with their own sessions.
 */
export class SponsorshipService {
  readonly #d: SponsorshipServiceDeps;
  constructor(deps: SponsorshipServiceDeps) {
    this.#d = deps;
  }

  /**
   * The principal a request acting as `targetId` runs under, or the refusal. Called once per
   * request that carries X-Svc-Act-As, and only then.
   */
  async actAs(principal: Principal, targetId: string): Promise<Result<Principal, 'error.auth.not_an_owner'>> {
    if (principal.actingOwnerId !== undefined || principal.guestUploadId !== undefined) {
      return refuse(
        'error.auth.not_an_owner',
        "Only a registered account's own session can act as a sponsored account.",
      );
    }
    const target = await guard(STORE, 'sponsorship read', () => this.#d.store.findSponsored(targetId));
    const verdict = decideActAs(principal.accountId, target);
    if (!verdict.ok) return verdict;
    return ok({ accountId: targetId, sessionId: principal.sessionId, actingOwnerId: principal.accountId });
  }

  /** Creates a sponsored account paid for by the caller: one store call, one transaction. */
  async create(caller: Caller): Promise<Result<SponsoredRecord, 'error.sponsored.cannot_sponsor'>> {
    // Acting as a sponsored account is a fact of the request, not of the store: refused here.
    const may = decideSponsor(caller, null);
    if (!may.ok) return may;
    const now = this.#d.clock.now();
    const accountId = uuidv7(now, this.#d.random.bytes(10));
    // The account row gives the id a home (albums, devices and sessions refer to accounts); it has
    // no password, so nothing can sign in as it, and its address key is no address. The store
    // re-reads whether the caller may sponsor (core's decideSponsorChange) in the same transaction.
    const account = {
      id: accountId,
      address: '',
      addressKey: sponsoredAddressKey(accountId),
      passwordHash: null,
      displayName: null,
      createdAt: now,
      lockedAt: null,
      credentialsChangedAt: null,
    };
    const created = await guard(STORE, 'sponsorship write', () =>
      this.#d.store.createSponsoredAccount({ account, sponsorId: caller.accountId }),
    );
    if (!created.ok) return created;
    return ok({ accountId, sponsorId: caller.accountId, createdAt: now, owners: [caller.accountId] });
  }

  /**
   * The operator's lever: `accountId`'s uploads are charged to `sponsorId` (null: to itself). One
   * level only, decided by core's `decideSponsorChange` on facts the store reads in the writing
   * transaction, the same rule `create` goes through.
   */
  async setSponsor(
    accountId: string,
    sponsorId: string | null,
  ): Promise<Result<void, 'error.sponsored.cannot_sponsor'>> {
    return guard(STORE, 'sponsorship write', () => this.#d.store.setSponsor(accountId, sponsorId));
  }

  /** The sponsored accounts the caller owns. */
  async list(caller: Caller): Promise<SponsoredRecord[]> {
    return guard(STORE, 'sponsorship read', () => this.#d.store.listOwnedBy(caller.accountId));
  }

  /** The sponsored account itself, for a caller acting as it (its profile). */
  async find(accountId: string): Promise<SponsoredRecord | null> {
    return guard(STORE, 'sponsorship read', () => this.#d.store.findSponsored(accountId));
  }

  /** An owner adds a registered account as another owner. */
  async addOwner(
    caller: Principal,
    accountId: string,
    ownerId: string,
  ): Promise<
    Result<
      SponsoredRecord,
      | 'error.auth.not_an_owner'
      | 'error.not_found'
      | 'error.sponsored.cannot_sponsor'
      | 'error.auth.reauthentication_required'
    >
  > {
    const record = await guard(STORE, 'sponsorship read', () => this.#d.store.findSponsored(accountId));
    const may = decideActAs(caller.accountId, record);
    if (!may.ok) return may;
    // A co-owner outlives every session of the account that added it: a stale token adds none.
    const recent = await this.#d.sessions.requireRecentAuthentication(caller, 'sponsored_owner_add');
    if (!recent.ok) return recent;
    const [account, ownerRecord] = await guard(STORE, 'account read', () =>
      Promise.all([this.#d.accounts.findAccountById(ownerId), this.#d.store.findSponsored(ownerId)]),
    );
    if (account === null) return refuse('error.not_found', 'No such account.');
    const registered = decideSponsor({}, ownerRecord);
    if (!registered.ok) return registered;
    await guard(STORE, 'sponsorship write', () => this.#d.store.addOwner(accountId, ownerId, this.#d.clock.now()));
    return ok((await this.find(accountId))!);
  }

  async removeOwner(
    caller: Caller,
    accountId: string,
    ownerId: string,
  ): Promise<Result<void, 'error.auth.not_an_owner' | 'error.not_found' | 'error.conflict'>> {
    const record = await guard(STORE, 'sponsorship read', () => this.#d.store.findSponsored(accountId));
    const may = decideOwnerRemoval(caller.accountId, record, ownerId);
    if (!may.ok) return may;
    if (!(await guard(STORE, 'sponsorship write', () => this.#d.store.removeOwner(accountId, ownerId))))
      return refuse('error.not_found', 'That account is not an owner.');
    return ok(undefined);
  }
}
