import { decideLease, mayReleaseLease, type LeaseRecord } from '../operations/lease.js';
import type { DeploymentRecord, DeploymentStore } from '../ports/deployment.js';
import type { LeaseStore } from '../ports/lease-store.js';

/** The in-memory reference deployment record and leases. */
export class MemoryDeploymentStore implements DeploymentStore, LeaseStore {
  record: DeploymentRecord | null = null;
  readonly leases = new Map<string, LeaseRecord>();

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
}
