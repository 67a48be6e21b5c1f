import { guard, refuse, type Result } from '../errors.js';
import type { CapabilityRevocationStore, RevokedCapability } from '../ports/capability-revocations.js';
import type { Clock } from '../ports/clock.js';
import type { PeerDirectory } from '../ports/peer-directory.js';
import type { PeerLookup, PeerReply } from '../ports/peer-lookup.js';
import type { PeerRateStore } from '../ports/peer-rate-store.js';
import type { Random } from '../ports/random.js';
import type { KeyRing } from '../tokens/key-ring.js';
import { formatHandle, handleHost, type Handle } from '../discovery/rules.js';
import { decidePeerAnswer } from './answer.js';
import {
  capabilityClaims,
  peekCapability,
  signCapability,
  verifyCapability,
  type CapabilityClaims,
  type VerifiedCapability,
} from './capability.js';
import { PeerUnavailableError } from './peer-error.js';
import { revocationCutoff } from './revocation.js';

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

export type CapabilityCheck = Result<
  VerifiedCapability,
  'error.federation.capability_invalid' | 'error.federation.rate_limited'
>;

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

  /**
   * Mints a token for `peer` on behalf of `subject`, remembering it (and the local account it was
   * minted for, so deleting the account revokes it) so it can be revoked.
   */
  async mint(
    peer: string,
    subject: string,
    accountId: string | null = null,
  ): Promise<{ token: string; claims: CapabilityClaims }> {
    const claims = capabilityClaims({
      issuer: this.d.baseUrl,
      peer,
      subject,
      now: this.d.clock.now(),
      random: this.d.random.bytes(10),
    });
    const token = await signCapability(claims, await this.d.keyRing.signingKey());
    await guard('error.store.unavailable', 'recording a capability', () =>
      this.d.revocations.recordMintedCapability({
        jti: claims.jti,
        peer,
        accountId,
        issuedAt: claims.iat * 1000,
        expiresAt: claims.exp * 1000,
      }),
    );
    const now = this.d.clock.now();
    if (now - this.#purgedAt >= 3_600_000) {
      this.#purgedAt = now;
      // Nothing older than the revocation window is ever listed again.
      await guard('error.store.unavailable', 'forgetting old capabilities', () =>
        this.d.revocations.purgeMintedCapabilities(revocationCutoff(now)),
      );
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
    const decision = await guard('error.store.unavailable', 'drawing from a peer bucket', () =>
      this.d.buckets.takePeerToken(peek.issuer, now, this.d.rate),
    );
    if (!decision.admitted)
      return refuse('error.federation.rate_limited', 'Too many lookups from this peer; try again later.', {
        retry_after: decision.retryAfterS,
      });
    return verified;
  }

  /**
   * Mints a token for the peer and forwards the lookup; a 200 for another handle than the one asked
   * is refused (decidePeerAnswer). Rejects with PeerUnavailableError when the peer does not answer.
   */
  async forward(
    peer: string,
    handle: Handle,
    subject: string,
    protocolVersion: string,
    accountId: string | null = null,
  ): Promise<Result<PeerReply, 'error.federation.peer_unavailable'>> {
    const { token } = await this.mint(peer, subject, accountId);
    const reply = await this.d.forwarder.lookup({
      peer,
      handle: formatHandle(handle.user, handle.host),
      capability: token,
      protocolVersion,
    });
    return decidePeerAnswer(peer, handle, reply);
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
    const revoked = await guard('error.store.unavailable', 'listing revocations', () =>
      this.d.revocations.listRevokedCapabilities(revocationCutoff(now) + 1),
    );
    return { issuer: this.d.baseUrl, revoked: revoked.filter((r) => r.revokedAt <= now) };
  }
}
