import { holds } from '../filters/filter.js';
import { CAPABILITY_PURGEABLE, CAPABILITY_REVOCABLE, REVOCATION_LISTED } from '../federation/revocation.js';
import { takeToken, type Bucket, type BucketDecision } from '../peer-rate-limit/bucket.js';
import type {
  CapabilityRevocationStore,
  MintedCapability,
  RevokedCapability,
} from '../ports/capability-revocations.js';
import type { ClaimOutcome, HandleRecord, HandleStore } from '../ports/handle-store.js';
import type { PeerRateStore } from '../ports/peer-rate-store.js';

/** The rows a memory discovery store keeps; two stores given the same state act as two processes over one database. */
export interface MemoryDiscoveryState {
  readonly handles: Map<string, HandleRecord>;
  readonly buckets: Map<string, Bucket>;
  readonly minted: Map<string, MintedCapability & { revokedAt: number | null }>;
}

export const memoryDiscoveryState = (): MemoryDiscoveryState => ({
  handles: new Map(),
  buckets: new Map(),
  minted: new Map(),
});

/** Handles, peer buckets and capability revocations in memory. Each method runs without an await, so it is atomic. */
export class MemoryDiscoveryStore implements HandleStore, PeerRateStore, CapabilityRevocationStore {
  constructor(readonly state: MemoryDiscoveryState = memoryDiscoveryState()) {}

  async claimHandle(claim: { accountId: string; user: string; at: number }): Promise<ClaimOutcome> {
    const mine = this.state.handles.get(claim.accountId);
    if (mine) return mine.user === claim.user ? 'claimed' : 'fixed';
    for (const h of this.state.handles.values()) if (h.user === claim.user) return 'taken';
    this.state.handles.set(claim.accountId, {
      accountId: claim.accountId,
      user: claim.user,
      published: false,
      claimedAt: claim.at,
      retiredAt: null,
    });
    return 'claimed';
  }

  async findHandleByAccount(accountId: string): Promise<HandleRecord | null> {
    return this.state.handles.get(accountId) ?? null;
  }

  async findHandleByUser(user: string): Promise<HandleRecord | null> {
    for (const h of this.state.handles.values()) if (h.user === user) return h;
    return null;
  }

  async setHandlePublished(accountId: string, published: boolean): Promise<boolean> {
    const h = this.state.handles.get(accountId);
    if (!h) return false;
    this.state.handles.set(accountId, { ...h, published });
    return true;
  }

  async takePeerToken(peer: string, now: number, rate: number): Promise<BucketDecision> {
    const decision = takeToken(this.state.buckets.get(peer) ?? null, now, rate);
    this.state.buckets.set(peer, decision.bucket);
    return decision;
  }

  async recordMintedCapability(token: MintedCapability): Promise<void> {
    if (this.state.minted.has(token.jti)) throw new Error(`duplicate jti ${token.jti}`);
    this.state.minted.set(token.jti, { ...token, revokedAt: null });
  }

  async revokeCapability(jti: string, at: number): Promise<boolean> {
    const t = this.state.minted.get(jti);
    if (!t || t.revokedAt !== null) return false;
    this.state.minted.set(jti, { ...t, revokedAt: at });
    return true;
  }

  async revokeCapabilitiesFor(peer: string, at: number): Promise<number> {
    let n = 0;
    for (const t of this.state.minted.values()) {
      if (t.peer === peer && holds(CAPABILITY_REVOCABLE, t, { at })) {
        this.state.minted.set(t.jti, { ...t, revokedAt: at });
        n++;
      }
    }
    return n;
  }

  async purgeMintedCapabilities(before: number): Promise<number> {
    let n = 0;
    for (const t of [...this.state.minted.values()]) {
      if (holds(CAPABILITY_PURGEABLE, t, { before })) {
        this.state.minted.delete(t.jti);
        n++;
      }
    }
    return n;
  }

  async listRevokedCapabilities(since: number): Promise<RevokedCapability[]> {
    return [...this.state.minted.values()]
      .filter((t): t is MintedCapability & { revokedAt: number } => holds(REVOCATION_LISTED, t, { since }))
      .sort((a, b) => a.revokedAt - b.revokedAt || (a.jti < b.jti ? -1 : 1))
      .map((t) => ({ jti: t.jti, revokedAt: t.revokedAt, expiresAt: t.expiresAt }));
  }
}
