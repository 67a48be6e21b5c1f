import { decideLease, mayReleaseLease, type LeaseRecord } from '../operations/lease.js';
import type { ClosedByRestore, DeploymentRecord, DeploymentStore } from '../ports/deployment.js';
import type { LeaseStore } from '../ports/lease-store.js';
import type { MemoryDeviceStore } from './memory-devices.js';
import type { MemoryOidcStore } from './memory-oidc.js';
import type { MemoryStore } from './memory-store.js';
import type { MemoryTotpStore } from './memory-totp-store.js';

/**
 * The in-memory reference deployment record and leases. What a restore closes reaches into the
 * stores it is built over, as the SQL stores share one database; it runs without awaiting, so it is
 * atomic.
 */
export class MemoryDeploymentStore implements DeploymentStore, LeaseStore {
  record: DeploymentRecord | null = null;
  readonly leases = new Map<string, LeaseRecord>();

  constructor(
    readonly over?: {
      readonly ledger: MemoryStore;
      readonly totp: MemoryTotpStore;
      readonly devices: MemoryDeviceStore;
      readonly oidc: MemoryOidcStore;
    },
  ) {}

  async takeLease(name: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
    const next = decideLease(this.leases.get(name) ?? null, holder, now, ttlMs);
    if (next !== null) this.leases.set(name, next);
    return next !== null;
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    if (mayReleaseLease(this.leases.get(name) ?? null, holder)) this.leases.delete(name);
  }

  async claimDeployment(first: DeploymentRecord): Promise<DeploymentRecord> {
    this.record ??= first;
    return this.record;
  }

  async setDeploymentIssuer(change: { issuer: string; issuerConfigured: boolean }): Promise<boolean> {
    if (this.record === null) return false;
    this.record = { ...this.record, ...change };
    return true;
  }

  async closeEverythingForRestore(at: number): Promise<ClosedByRestore> {
    const o = this.over;
    if (o === undefined) throw new Error('MemoryDeploymentStore was built without the stores a restore closes');
    let sessions = 0;
    for (const [id, s] of o.ledger.sessions) {
      if (s.closedAt !== null) continue;
      o.ledger.sessions.set(id, { ...s, closedAt: at });
      sessions++;
    }
    for (const [id, a] of o.ledger.accounts) o.ledger.accounts.set(id, { ...a, credentialsChangedAt: at });
    const closed = {
      sessions,
      secondFactorChallenges: o.totp.challenges.size,
      revokeAllChallenges: o.devices.challenges.size,
      oidcLoginCodes: o.oidc.codes.size,
      oidcFlows: o.oidc.flows.size,
    };
    o.totp.challenges.clear();
    o.devices.challenges.clear();
    o.oidc.codes.clear();
    o.oidc.flows.clear();
    return closed;
  }
}
