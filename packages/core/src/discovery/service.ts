import { decideOwnIdentity } from '../sponsorship/rules.js';
import { decideLookup, type Looker } from '../access/rules.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AccountStore } from '../ports/account-store.js';
import type { Clock } from '../ports/clock.js';
import type { DeviceDirectoryStore } from '../ports/device-directory.js';
import type { HandleStore } from '../ports/handle-store.js';
import type { PeerRateStore } from '../ports/peer-rate-store.js';
import { decideLookupDraw, lookupBucketKey, lookupBudgetHolder } from './lookup-budget.js';
import type { Principal, SessionService } from '../session/service.js';
import {
  anonymousRecord,
  handleInService,
  formatHandle,
  handleHost,
  isHandleUser,
  lookupAnswer,
  parseAcctResource,
  type Handle,
  type LookupAnswer,
} from './rules.js';

export interface DiscoveryServiceDeps {
  readonly handles: HandleStore;
  readonly accounts: AccountStore;
  readonly directories: DeviceDirectoryStore;
  readonly clock: Clock;
  /** This server's base URL (SVC_BASE_URL): its host is every local handle's host. */
  readonly baseUrl: string;
  /** A handle is claimed for good and a public record outlives the session: both need a recent credential proof. */
  readonly sessions: Pick<SessionService, 'requireRecentAuthentication'>;
  /** The keyed token buckets (shared by every process) each account's lookups draw from. */
  readonly buckets: PeerRateStore;
  /** Lookups per minute per account (SVC_LOOKUP_RATE). */
  readonly lookupRate: number;
}

/** Handles, the opt-in public record, and lookups of this server's own accounts. */
export class DiscoveryService {
  readonly host: string;
  constructor(private readonly d: DiscoveryServiceDeps) {
    this.host = handleHost(d.baseUrl);
  }

  async claim(
    caller: Principal,
    user: string,
  ): Promise<
    Result<
      { handle: string },
      | 'error.request.invalid'
      | 'error.discovery.handle_taken'
      | 'error.discovery.handle_fixed'
      | 'error.sponsored.no_identity'
      | 'error.auth.reauthentication_required'
    >
  > {
    const own = decideOwnIdentity(caller);
    if (!own.ok) return own;
    const { accountId } = caller;
    if (!isHandleUser(user)) return refuse('error.request.invalid', 'user must match [a-z0-9][a-z0-9._-]{0,63}.');
    const recent = await this.d.sessions.requireRecentAuthentication(caller, 'handle_claim');
    if (!recent.ok) return recent;
    const outcome = await guard('error.store.unavailable', 'claiming a handle', () =>
      this.d.handles.claimHandle({ accountId, user, at: this.d.clock.now() }),
    );
    if (outcome === 'taken') return refuse('error.discovery.handle_taken', 'Another account holds this handle.');
    if (outcome === 'fixed')
      return refuse('error.discovery.handle_fixed', 'This account already has a handle; it cannot be changed.');
    return ok({ handle: formatHandle(user, this.host) });
  }

  async setPublished(
    caller: Principal,
    published: boolean,
  ): Promise<
    Result<
      { handle: string; published: boolean },
      'error.discovery.no_handle' | 'error.sponsored.no_identity' | 'error.auth.reauthentication_required'
    >
  > {
    const own = decideOwnIdentity(caller);
    if (!own.ok) return own;
    // Publishing and withdrawing alike: the record is the account's public face, not the session's.
    const recent = await this.d.sessions.requireRecentAuthentication(caller, 'discovery_publish');
    if (!recent.ok) return recent;
    const { accountId } = caller;
    const changed = await guard('error.store.unavailable', 'publishing a handle', () =>
      this.d.handles.setHandlePublished(accountId, published),
    );
    const record = changed ? await this.d.handles.findHandleByAccount(accountId) : null;
    if (record === null) return refuse('error.discovery.no_handle', 'Claim a handle before publishing it.');
    return ok({ handle: formatHandle(record.user, this.host), published: record.published });
  }

  /** A local handle from its user part. */
  formatHandle(user: string): string {
    return formatHandle(user, this.host);
  }

  /** The account's handle as shown in its profile, or null. */
  async handleOf(accountId: string): Promise<string | null> {
    const record = await guard('error.store.unavailable', 'reading a handle', () =>
      this.d.handles.findHandleByAccount(accountId),
    );
    return record === null ? null : formatHandle(record.user, this.host);
  }

  isLocal(handle: Handle): boolean {
    return handle.host === this.host;
  }

  /**
   * Where a lookup of `handle` goes: answered here, or forwarded to its host for a local account
   * only. A peer's capability token never relays onward (access/rules.ts, decideLookup).
   */
  lookupRoute(looker: Looker, handle: Handle): Result<'local' | 'forward', 'error.not_found'> {
    return decideLookup(looker, this.isLocal(handle));
  }

  /**
   * Every lookup a local account makes, of a local handle or forwarded to a peer, first draws one
   * token from the account's bucket (the acting owner's, when acting as a sponsored account).
   */
  async admitLookup(principal: Principal): Promise<Result<void, 'error.request.too_many'>> {
    const key = lookupBucketKey(lookupBudgetHolder(principal));
    const decision = await guard('error.store.unavailable', 'drawing from a lookup budget', () =>
      this.d.buckets.takePeerToken(key, this.d.clock.now(), this.d.lookupRate),
    );
    return decideLookupDraw(decision, this.d.lookupRate);
  }

  /** An authenticated lookup of one of this server's handles. */
  async lookup(handle: Handle): Promise<Result<LookupAnswer, 'error.not_found'>> {
    const missing = refuse('error.not_found', 'No account has this handle.');
    if (!this.isLocal(handle)) return missing;
    const record = handleInService(
      await guard('error.store.unavailable', 'looking up a handle', () => this.d.handles.findHandleByUser(handle.user)),
    );
    if (record === null) return missing;
    const [account, directory] = await Promise.all([
      this.d.accounts.findAccountById(record.accountId),
      this.d.directories.findDirectory(record.accountId),
    ]);
    if (account === null) return missing;
    return ok(lookupAnswer(record, this.host, account.displayName, directory));
  }

  /**
   * The anonymous WebFinger answer. Every "no" (no such handle, not published, another host) is
   * the same refusal, so the answer cannot tell them apart.
   */
  async webfinger(
    resource: string,
  ): Promise<Result<{ subject: string; displayName: string | null }, 'error.request.invalid' | 'error.not_found'>> {
    if (!/^acct:[^@\s]+@[^@\s]+$/i.test(resource))
      return refuse('error.request.invalid', 'resource must be acct:user@host.');
    const nothing = refuse('error.not_found', 'No public record for this resource.');
    // A well-formed acct: URI that no handle could ever match (say, upper case) is simply nobody.
    const handle = parseAcctResource(resource);
    if (handle === null || !this.isLocal(handle)) return nothing;
    const record = handleInService(
      await guard('error.store.unavailable', 'reading a public record', () =>
        this.d.handles.findHandleByUser(handle.user),
      ),
    );
    const account = record?.published ? await this.d.accounts.findAccountById(record.accountId) : null;
    const shown = account ? anonymousRecord(record, this.host, account.displayName) : null;
    if (shown === null) return nothing;
    return ok({ subject: `acct:${shown.handle}`, displayName: shown.displayName });
  }
}
