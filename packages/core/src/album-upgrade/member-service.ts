import { guard } from '../errors.js';
import type { MemberUpgradeStore, WriteTransport } from '../ports/member-upgrade.js';
import {
  initialMemberState,
  memberTransition,
  type MemberEffect,
  type MemberEvent,
  type MemberState,
} from './member.js';

export interface MemberUpgradeServiceDeps {
  readonly store: MemberUpgradeStore;
  readonly transport: WriteTransport;
}

/**
 * Runs the member machine for one album: load, transition, persist, then deliver the outbox one
 * write at a time, persisting each acknowledgement. After a crash, `resume` delivers whatever the
 * outbox still holds and says whether the server must be asked for the phase (upgrade_pending_to set).
 */
export class MemberUpgradeService {
  readonly #d: MemberUpgradeServiceDeps;

  constructor(deps: MemberUpgradeServiceDeps) {
    this.#d = deps;
  }

  async #load(albumId: string, version: string): Promise<MemberState> {
    return (
      (await guard('error.store.unavailable', 'loading member state', () => this.#d.store.loadMemberState(albumId))) ??
      initialMemberState(albumId, version)
    );
  }

  async #save(state: MemberState): Promise<void> {
    await guard('error.store.unavailable', 'saving member state', () => this.#d.store.saveMemberState(state));
  }

  async handle(album: { albumId: string; version: string }, event: MemberEvent): Promise<MemberEffect[]> {
    const { state, effects } = memberTransition(await this.#load(album.albumId, album.version), event);
    await this.#save(state);
    await this.deliver(album);
    return effects;
  }

  /** Sends the outbox in order; a failed send leaves the rest for the next call. */
  async deliver(album: { albumId: string; version: string }): Promise<void> {
    let state = await this.#load(album.albumId, album.version);
    for (const write of state.outbox) {
      await this.#d.transport.sendWrite(write);
      state = memberTransition(state, { type: 'sent', writeId: write.writeId }).state;
      await this.#save(state);
    }
  }

  /** After a restart: finish delivery and report the pending upgrade, if any, to ask the server about. */
  async resume(album: {
    albumId: string;
    version: string;
  }): Promise<{ upgradePendingTo: string | null; intentId: string | null }> {
    await this.deliver(album);
    const state = await this.#load(album.albumId, album.version);
    return state.phase === 'upgraded' || state.intent === null
      ? { upgradePendingTo: null, intentId: null }
      : { upgradePendingTo: state.intent.toVersion, intentId: state.intent.intentId };
  }
}
