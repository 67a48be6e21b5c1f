import { ok, type Result } from '../errors.js';
import { accountState, cancelledByErasure, planErasure, revokedByErasure } from '../account-deletion/rules.js';
import { decideAssetTransition } from '../assets/lifecycle.js';
import type { AccountErasureStore, ErasureOutcome } from '../ports/account-erasure.js';
import { settledHardSince } from '../quota/ledger-rules.js';
import type { QuotaPolicy } from '../quota/machine.js';
import type { MemoryDeviceStore } from './memory-devices.js';
import type { MemoryDiscoveryStore } from './memory-discovery.js';
import type { MemoryOidcStore } from './memory-oidc.js';
import type { MemoryQuotaStore } from './memory-quota-store.js';
import type { MemorySecondFactorStore } from './memory-second-factor.js';
import type { MemoryLinkStore, MemorySponsorshipStore } from './memory-sharing.js';
import type { MemoryStore } from './memory-store.js';
import type { MemoryTotpStore } from './memory-totp-store.js';
import type { MemorySyncLog } from './memory-sync.js';
import type { MemorySignInStore } from './memory-sign-in.js';

export interface MemoryErasureStores {
  readonly accounts: MemoryStore;
  readonly totp: MemoryTotpStore;
  readonly secondFactor: MemorySecondFactorStore;
  readonly devices: MemoryDeviceStore;
  readonly oidc: MemoryOidcStore;
  readonly discovery: MemoryDiscoveryStore;
  readonly links: MemoryLinkStore;
  readonly quota: MemoryQuotaStore;
  readonly sponsorship: MemorySponsorshipStore;
  readonly sync: MemorySyncLog;
  readonly signIn: MemorySignInStore;
}

/**
 * The in-memory reference for deleting an account. It reaches into every memory store it is built
 * over, as the SQL stores share one database, and runs without an await: one step, as a
 * transaction is.
 */
export class MemoryAccountErasure implements AccountErasureStore {
  constructor(readonly s: MemoryErasureStores) {}

  /**
   * Sign-in tickets end with the account, in the deletion's step (the credentials stamp the
   * deletion moves already ends them; their records go too).
   */
  voidSignInTickets(accountId: string): void {
    const tickets = this.s.signIn.tickets;
    for (const [hash, t] of tickets) if (t.accountId === accountId) tickets.delete(hash);
  }

  async eraseAccount(
    accountId: string,
    policy: QuotaPolicy,
    now: number,
  ): Promise<Result<ErasureOutcome, 'error.not_found'>> {
    const { accounts, totp, secondFactor, devices, oidc, discovery, links, quota, sponsorship, sync } = this.s;
    const plan = planErasure({
      accountId,
      account: accountState(accounts.accounts.get(accountId) ?? null),
      sponsoredAccounts: [...sponsorship.records.values()]
        .filter((r) => r.sponsorId === accountId)
        .map((r) => r.accountId),
      ledgerPayees: [...quota.accounts.values()].filter((r) => r.sponsorId === accountId).map((r) => r.accountId),
    });
    if (!plan.ok) return plan;
    const erased = new Set(plan.value.accounts);

    for (const id of erased) {
      const a = accounts.accounts.get(id)!;
      accounts.accounts.set(id, {
        ...a,
        address: null,
        addressKey: null,
        passwordHash: null,
        displayName: null,
        credentialsChangedAt: now,
        deletedAt: a.deletedAt ?? now,
      });
      accounts.cohorts.delete(id);
      this.voidSignInTickets(id);
      totp.enrollments.delete(id);
      secondFactor.throttles.delete(id);
      devices.directories.delete(id);
      sync.heads.delete(id);
      sync.entries.delete(id);
      const handle = discovery.state.handles.get(id);
      if (handle) discovery.state.handles.set(id, { ...handle, published: false, retiredAt: now });
    }
    for (const session of accounts.sessions.values())
      if (erased.has(session.accountId) && session.closedAt === null)
        accounts.sessions.set(session.id, { ...session, closedAt: now });
    for (const [k, c] of totp.challenges) if (erased.has(c.accountId)) totp.challenges.delete(k);
    for (const [k, c] of devices.challenges) if (erased.has(c.accountId)) devices.challenges.delete(k);
    for (const [k, l] of oidc.links) if (erased.has(l.accountId)) oidc.links.delete(k);
    for (const [k, c] of oidc.codes) if (erased.has(c.accountId)) oidc.codes.delete(k);
    for (const [k, f] of oidc.flows) if (f.initiator !== null && erased.has(f.initiator)) oidc.flows.delete(k);
    for (const t of discovery.state.minted.values())
      if (revokedByErasure(t, erased, now)) discovery.state.minted.set(t.jti, { ...t, revokedAt: now });
    for (const l of links.links.values())
      if (erased.has(l.ownerId) && l.revokedAt === null) links.links.set(l.idHash, { ...l, revokedAt: now });

    const cancelledUploads: string[] = [];
    const moved = new Set<string>();
    for (const u of quota.uploads.values()) {
      if (!cancelledByErasure(u, erased)) continue;
      quota.uploads.set(u.id, { ...u, state: 'Cancelled' });
      const payer = quota.accounts.get(u.payerId);
      if (payer) payer.reserved -= u.declaredSize;
      moved.add(u.payerId);
      cancelledUploads.push(u.id);
    }
    let purgedAssets = 0;
    for (const a of [...quota.assets.values()]) {
      if (!erased.has(a.ownerId)) continue;
      const t = decideAssetTransition(a, { kind: 'erase' });
      if (t.ok && t.write === 'delete') {
        quota.assets.delete(a.id);
        purgedAssets++;
      }
    }
    for (const key of quota.federated) if (erased.has(key.split('\n')[0]!)) quota.federated.delete(key);
    for (const id of plan.value.unsponsor) quota.sponsorRow(id, null);
    for (const id of moved) {
      const row = quota.accounts.get(id);
      if (row) row.hardSince = settledHardSince(row, policy, now);
    }

    for (const id of erased) sponsorship.records.delete(id);
    for (const r of sponsorship.records.values()) {
      if (r.owners.some((o) => erased.has(o)))
        sponsorship.records.set(r.accountId, { ...r, owners: r.owners.filter((o) => !erased.has(o)) });
    }
    return ok({ erased: plan.value.accounts, cancelledUploads: cancelledUploads.sort(), purgedAssets });
  }
}
