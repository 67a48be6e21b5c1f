import { decideLookup, type Looker } from '../access/rules.js';
import { guard, ok, refuse, type Result } from '../errors.js';
import type { AccountStore } from '../ports/account-store.js';
import type { CapabilityRevocationStore, RevokedCapability } from '../ports/capability-revocations.js';
import type { Clock } from '../ports/clock.js';
import type { DeviceDirectoryStore } from '../ports/device-directory.js';
import type { HandleStore } from '../ports/handle-store.js';
import type { PeerDirectory } from '../ports/peer-directory.js';
import type { PeerLookup, PeerReply } from '../ports/peer-lookup.js';
import type { PeerRateStore } from '../ports/peer-rate-store.js';
import type { Random } from '../ports/random.js';
import type { KeyRing } from '../tokens/key-ring.js';
import { capabilityClaims, peekCapability, signCapability, verifyCapability, type CapabilityClaims, type VerifiedCapability } from './capability.js';
import { PeerUnavailableError } from './peer-error.js';
import {
  anonymousRecord,
  formatHandle,
  handleHost,
  isHandleUser,
  lookupAnswer,
  parseAcctResource,
  revocationCutoff,
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
}

/** Handles, the opt-in public record, and lookups of this server's own accounts. */
export class DiscoveryService {
  readonly host: string;
  constructor(private readonly d: DiscoveryServiceDeps) {
    this.host = handleHost(d.baseUrl);
  }

  async claim(accountId: string, user: string): Promise<Result<{ handle: string }, 'error.request.invalid' | 'error.discovery.handle_taken' | 'error.discovery.handle_fixed'>> {
    if (!isHandleUser(user)) return refuse('error.request.invalid', 'user must match [a-z0-9][a-z0-9._-]{0,63}.');
    const outcome = await guard('error.store.unavailable', 'claiming a handle', () => this.d.handles.claimHandle({ accountId, user, at: this.d.clock.now() }));
    if (outcome === 'taken') return refuse('error.discovery.handle_taken', 'Another account holds this handle.');
    if (outcome === 'fixed') return refuse('error.discovery.handle_fixed', 'This account already has a handle; it cannot be changed.');
    return ok({ handle: formatHandle(user, this.host) });
  }

  async setPublished(accountId: string, published: boolean): Promise<Result<{ handle: string; published: boolean }, 'error.discovery.no_handle'>> {
    const changed = await guard('error.store.unavailable', 'publishing a handle', () => this.d.handles.setHandlePublished(accountId, published));
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
    const record = await guard('error.store.unavailable', 'reading a handle', () => this.d.handles.findHandleByAccount(accountId));
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

  /** An authenticated lookup of one of this server's handles. */
  async lookup(handle: Handle): Promise<Result<LookupAnswer, 'error.not_found'>> {
    const missing = refuse('error.not_found', 'No account has this handle.');
    if (!this.isLocal(handle)) return missing;
    const record = await guard('error.store.unavailable', 'looking up a handle', () => this.d.handles.findHandleByUser(handle.user));
    if (record === null) return missing;
    const [account, directory] = await Promise.all([this.d.accounts.findAccountById(record.accountId), this.d.directories.findDirectory(record.accountId)]);
    if (account === null) return missing;
    return ok(lookupAnswer(record, this.host, account.displayName, directory));
  }

  /**
   * The anonymous WebFinger answer. Every "no" (no such handle, not published, another host) is
   * the same refusal, so the answer cannot tell them apart.
   */
  async webfinger(resource: string): Promise<Result<{ subject: string; displayName: string | null }, 'error.request.invalid' | 'error.not_found'>> {
    if (!/^acct:[^@\s]+@[^@\s]+$/.test(resource)) return refuse('error.request.invalid', 'resource must be acct:user@host.');
    const nothing = refuse('error.not_found', 'No public record for this resource.');
    // A well-formed acct: URI that no handle could ever match (say, upper case) is simply nobody.
    const handle = parseAcctResource(resource);
    if (handle === null || !this.isLocal(handle)) return nothing;
    const record = await guard('error.store.unavailable', 'reading a public record', () => this.d.handles.findHandleByUser(handle.user));
    const account = record?.published ? await this.d.accounts.findAccountById(record.accountId) : null;
    const shown = account ? anonymousRecord(record, this.host, account.displayName) : null;
    if (shown === null) return nothing;
    return ok({ subject: `acct:${shown.handle}`, displayName: shown.displayName });
  }
}

export interface FederationServiceDeps {
  readonly keyRing: KeyRing;
  readonly clock: Clock;
  readonly random: Random;
  /** This server's base URL: `iss` of what it mints, `aud` of what it accepts. */
  readonly baseUrl: string;
  /** The listed peers' base URLs (SVC_FEDERATION_PEERS). */
  readonly peers: readonly string[];
  /** Tokens per minute per peer, and the bucket's size (SVC_FEDERATION_RATE). */
  readonly rate: number;
  readonly directory: PeerDirectory;
  readonly forwarder: PeerLookup;
  readonly revocations: CapabilityRevocationStore;
  readonly buckets: PeerRateStore;
}

export type CapabilityCheck = Result<VerifiedCapability, 'error.federation.capability_invalid' | 'error.federation.rate_limited'>;

/** Capability tokens between servers: minting, checking, forwarding, revoking, and the per-peer limit. */
export class FederationService {
  readonly #byHost = new Map<string, string>();
  /** When this process last forgot stale minted tokens (at most hourly, piggybacked on minting). */
  #purgedAt = -Infinity;
  readonly #peers: ReadonlySet<string>;
  constructor(private readonly d: FederationServiceDeps) {
    for (const peer of d.peers) this.#byHost.set(handleHost(peer), peer);
    this.#peers = new Set(d.peers);
  }

  /** The listed peer serving handles of `host`, or null. */
  peerFor(host: string): string | null {
    return this.#byHost.get(host) ?? null;
  }

  /** Mints a token for `peer` on behalf of `subject`, remembering it so it can be revoked. */
  async mint(peer: string, subject: string): Promise<{ token: string; claims: CapabilityClaims }> {
    const claims = capabilityClaims({ issuer: this.d.baseUrl, peer, subject, now: this.d.clock.now(), random: this.d.random.bytes(10) });
    const token = await signCapability(claims, await this.d.keyRing.signingKey());
    await guard('error.store.unavailable', 'recording a capability', () =>
      this.d.revocations.recordMintedCapability({ jti: claims.jti, peer, issuedAt: claims.iat * 1000, expiresAt: claims.exp * 1000 }),
    );
    const now = this.d.clock.now();
    if (now - this.#purgedAt >= 3_600_000) {
      this.#purgedAt = now;
      // Nothing older than the revocation window is ever listed again.
      await guard('error.store.unavailable', 'forgetting old capabilities', () => this.d.revocations.purgeMintedCapabilities(revocationCutoff(now)));
    }
    return { token, claims };
  }

  /**
   * Checks a token presented by a peer: a listed issuer, its key from the issuer's server info,
   * signature and claims with jose, its jti against the issuer's revocation record, then one token
   * from the issuer's bucket. The bucket is drawn only for tokens that verify, so nobody can spend
   * a peer's budget by forging its name.
   */
  async check(token: string): Promise<CapabilityCheck> {
    const invalid = (detail: string) => refuse('error.federation.capability_invalid' as const, detail);
    const peek = peekCapability(token);
    if (peek === null) return invalid('Not a capability token.');
    if (!this.#peers.has(peek.issuer)) return invalid('The issuer is not a listed peer.');
    const now = this.d.clock.now();
    let verified: CapabilityCheck;
    try {
      const jwk = await this.d.directory.verificationKey(peek.issuer, peek.kid);
      if (jwk === null) return invalid('The issuer does not publish this key.');
      verified = await verifyCapability(token, jwk, { issuer: peek.issuer, audience: this.d.baseUrl, now });
      if (!verified.ok) return verified;
      const revoked = await this.d.directory.revokedJtis(peek.issuer);
      if (revoked.has(verified.value.jti)) return invalid('The issuer revoked this token.');
    } catch (err) {
      if (err instanceof PeerUnavailableError) return invalid('The issuer cannot be reached to check this token.');
      throw err;
    }
    const decision = await guard('error.store.unavailable', 'drawing from a peer bucket', () => this.d.buckets.takePeerToken(peek.issuer, now, this.d.rate));
    if (!decision.admitted) return refuse('error.federation.rate_limited', 'Too many lookups from this peer; try again later.', { retry_after: decision.retryAfterS });
    return verified;
  }

  /** Mints a token for the peer and forwards the lookup. Rejects with PeerUnavailableError. */
  async forward(peer: string, handle: Handle, subject: string, protocolVersion: string): Promise<PeerReply> {
    const { token } = await this.mint(peer, subject);
    return this.d.forwarder.lookup({ peer, handle: formatHandle(handle.user, handle.host), capability: token, protocolVersion });
  }

  async revoke(jti: string): Promise<boolean> {
    return this.d.revocations.revokeCapability(jti, this.d.clock.now());
  }

  /** Revokes every live token minted for `peer` (a base URL, listed or not any more). */
  async revokePeer(peer: string): Promise<number> {
    return this.d.revocations.revokeCapabilitiesFor(peer.replace(/\/+$/, ''), this.d.clock.now());
  }

  /** The revocations of the last 24 hours, computed from the clock. */
  async revokedRecord(): Promise<{ issuer: string; revoked: RevokedCapability[] }> {
    const now = this.d.clock.now();
    const revoked = await guard('error.store.unavailable', 'listing revocations', () => this.d.revocations.listRevokedCapabilities(revocationCutoff(now) + 1));
    return { issuer: this.d.baseUrl, revoked: revoked.filter((r) => r.revokedAt <= now) };
  }
}
