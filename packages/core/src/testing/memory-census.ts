import type { AccountRecord } from '../ports/account-store.js';
import type { CensusBounds, CensusCounts, DeploymentCensus } from '../ports/deployment-census.js';
import { sessionCounted, uploadCounted } from '../operator/census.js';
import { isLiveAccount } from '../account-deletion/rules.js';
import type { MemoryQuotaStore } from './memory-quota-store.js';
import type { MemoryStore } from './memory-store.js';

/** The census over the in-memory stores: the reference implementation of {@link DeploymentCensus}. */
export class MemoryDeploymentCensus implements DeploymentCensus {
  constructor(private readonly stores: { readonly accounts: MemoryStore; readonly quota: MemoryQuotaStore }) {}

  async listAccounts(after: string | null, limit: number): Promise<AccountRecord[]> {
    return [...this.stores.accounts.accounts.values()]
      .filter((a) => after === null || a.id > after)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, limit)
      .map((a) => ({ ...a }));
  }

  async countDeployment(bounds: CensusBounds): Promise<CensusCounts> {
    const uploads = [...this.stores.quota.uploads.values()].filter((u) => uploadCounted(u, bounds));
    const blobs = [...this.stores.quota.blobs.values()];
    return {
      accounts: [...this.stores.accounts.accounts.values()].filter(isLiveAccount).length,
      openSessions: [...this.stores.accounts.sessions.values()].filter((s) => sessionCounted(s, bounds)).length,
      charged: [...this.stores.quota.accounts.values()].reduce((n, r) => n + r.charged, 0),
      reserved: uploads.reduce((n, u) => n + u.declaredSize, 0),
      openUploads: uploads.length,
      blobs: blobs.length,
      blobBytes: blobs.reduce((n, b) => n + b.size, 0),
    };
  }
}
