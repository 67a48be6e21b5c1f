import type { MemberState } from '../album-upgrade/member.js';
import type { MemberUpgradeStore } from '../ports/member-upgrade.js';

/** In-memory member-side store. Keeps a structured clone, as a real store would serialise. */
export class MemoryMemberUpgradeStore implements MemberUpgradeStore {
  readonly states = new Map<string, MemberState>();
  async loadMemberState(albumId: string): Promise<MemberState | null> {
    const s = this.states.get(albumId);
    return s === undefined ? null : structuredClone(s);
  }
  async saveMemberState(state: MemberState): Promise<void> {
    this.states.set(state.albumId, structuredClone(state));
  }
}
