import type { DeploymentRecord, DeploymentStore } from '../ports/deployment.js';

/** The in-memory reference deployment record. */
export class MemoryDeploymentStore implements DeploymentStore {
  record: DeploymentRecord | null = null;

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
