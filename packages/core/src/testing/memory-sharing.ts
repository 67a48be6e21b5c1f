import { decideIntake } from '../federated/rules.js';
import { decideDropReservation } from '../links/rules.js';
import type { FederatedIntakeRecord, FederatedIntakeStore, IntakeOutcome } from '../ports/federated-intakes.js';
import type { DropRecord, DropReservation, LinkRecord, LinkStore } from '../ports/link-store.js';
import type { SponsoredRecord, SponsorshipStore } from '../ports/sponsorship-store.js';
import { isOpenState, uploadState } from '../upload/machine.js';

/** In-memory reference implementation of the sponsorship store. */
export class MemorySponsorshipStore implements SponsorshipStore {
  readonly records = new Map<string, SponsoredRecord>();

  async createSponsored(r: { accountId: string; sponsorId: string; createdAt: number }): Promise<void> {
    if (this.records.has(r.accountId)) throw new Error(`sponsored account ${r.accountId} exists`);
    this.records.set(r.accountId, { ...r, owners: [r.sponsorId] });
  }
  async findSponsored(accountId: string): Promise<SponsoredRecord | null> {
    return this.records.get(accountId) ?? null;
  }
  async listOwnedBy(ownerId: string): Promise<SponsoredRecord[]> {
    return [...this.records.values()].filter((r) => r.owners.includes(ownerId)).sort((a, b) => a.createdAt - b.createdAt || (a.accountId < b.accountId ? -1 : 1));
  }
  async addOwner(accountId: string, ownerId: string): Promise<boolean> {
    const r = this.records.get(accountId);
    if (!r) return false;
    if (!r.owners.includes(ownerId)) this.records.set(accountId, { ...r, owners: [...r.owners, ownerId] });
    return true;
  }
  async removeOwner(accountId: string, ownerId: string): Promise<boolean> {
    const r = this.records.get(accountId);
    if (!r || !r.owners.includes(ownerId)) return false;
    this.records.set(accountId, { ...r, owners: r.owners.filter((o) => o !== ownerId) });
    return true;
  }
}

/** In-memory reference implementation of the link store. Each method runs without awaiting, so it is atomic. */
export class MemoryLinkStore implements LinkStore {
  readonly links = new Map<string, LinkRecord>();
  readonly drops = new Map<string, DropRecord>();

  async createLink(link: LinkRecord): Promise<void> {
    if (this.links.has(link.id)) throw new Error(`link ${link.id} exists`);
    this.links.set(link.id, link);
  }
  async findLink(id: string): Promise<LinkRecord | null> {
    return this.links.get(id) ?? null;
  }
  async listLinks(ownerId: string): Promise<LinkRecord[]> {
    return [...this.links.values()].filter((l) => l.ownerId === ownerId).sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
  }
  async revokeLink(ownerId: string, id: string, now: number): Promise<boolean> {
    const l = this.links.get(id);
    if (!l || l.ownerId !== ownerId || l.revokedAt !== null) return false;
    this.links.set(id, { ...l, revokedAt: now });
    return true;
  }
  async reserveDrop(linkId: string, size: number, now: number): Promise<DropReservation> {
    const l = this.links.get(linkId) ?? null;
    const outcome = decideDropReservation(l, size, now);
    if (outcome === 'reserved') this.links.set(linkId, { ...l!, acceptedBytes: l!.acceptedBytes + size });
    return outcome;
  }
  async releaseDrop(linkId: string, size: number): Promise<void> {
    const l = this.links.get(linkId);
    if (l) this.links.set(linkId, { ...l, acceptedBytes: Math.max(0, l.acceptedBytes - size) });
  }
  async recordDrop(drop: DropRecord): Promise<void> {
    if (this.drops.has(drop.uploadId)) throw new Error(`drop ${drop.uploadId} exists`);
    this.drops.set(drop.uploadId, drop);
  }
  async findDrop(uploadId: string): Promise<DropRecord | null> {
    return this.drops.get(uploadId) ?? null;
  }
  async listDrops(linkId: string): Promise<DropRecord[]> {
    return [...this.drops.values()].filter((d) => d.linkId === linkId).sort((a, b) => a.createdAt - b.createdAt || (a.uploadId < b.uploadId ? -1 : 1));
  }
}

/** In-memory reference implementation of the federated intake store. */
export class MemoryFederatedIntakes implements FederatedIntakeStore {
  readonly intakes = new Map<string, FederatedIntakeRecord>();

  async openIntake(intake: FederatedIntakeRecord, room: number | null, now: number): Promise<IntakeOutcome> {
    if (this.intakes.has(intake.id)) throw new Error(`intake ${intake.id} exists`);
    if (isOpenState(intake.state)) {
      let pending = 0;
      for (const i of this.intakes.values()) {
        if (i.receiverId === intake.receiverId && i.peer === intake.peer && isOpenState(uploadState(i, now))) pending += i.declaredSize;
      }
      if (decideIntake(pending, intake.declaredSize, room) === 'over_budget') return 'over_budget';
    }
    this.intakes.set(intake.id, intake);
    return 'reserved';
  }
  async findIntake(id: string): Promise<FederatedIntakeRecord | null> {
    return this.intakes.get(id) ?? null;
  }
  async markReceived(id: string, size: number, now: number): Promise<boolean> {
    const i = this.intakes.get(id);
    if (!i || !isOpenState(uploadState(i, now))) return false;
    this.intakes.set(id, { ...i, state: 'WaitingForProcessing', receivedSize: size });
    return true;
  }
  async closeIntake(id: string, state: 'Completed' | 'Merged' | 'Cancelled'): Promise<boolean> {
    const i = this.intakes.get(id);
    if (!i || !isOpenState(i.state)) return false;
    this.intakes.set(id, { ...i, state });
    return true;
  }
  async expireIntakes(now: number): Promise<string[]> {
    const out: string[] = [];
    for (const i of this.intakes.values()) {
      if (isOpenState(i.state) && now >= i.expiresAt) {
        this.intakes.set(i.id, { ...i, state: 'Expired' });
        out.push(i.id);
      }
    }
    return out;
  }
}
