import type { MemberState, OutgoingWrite } from '../album-upgrade/member.js';

/** The member client's local record of an album's upgrade (survives crashes). */
export interface MemberUpgradeStore {
  loadMemberState(albumId: string): Promise<MemberState | null>;
  saveMemberState(state: MemberState): Promise<void>;
}

/**
 * Sends one write to the server. Receivers deduplicate by `writeId`, so a write re-sent after a
 * crash lands once.
 */
export interface WriteTransport {
  sendWrite(write: OutgoingWrite): Promise<void>;
}
