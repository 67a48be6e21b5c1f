import type { DeprecationStore } from '../ports/deprecation-store.js';
import { decideAnnouncement, type DeprecationAnnouncement } from '../versioning/deprecation.js';

/** In-memory deprecation announcements: the reference implementation of {@link DeprecationStore}. */
export class MemoryDeprecationStore implements DeprecationStore {
  readonly #list: DeprecationAnnouncement[] = [];

  async listDeprecations(): Promise<DeprecationAnnouncement[]> {
    return this.#list.map((a) => ({ ...a }));
  }

  async announceDeprecation(
    ...[candidate, policy]: Parameters<DeprecationStore['announceDeprecation']>
  ): ReturnType<DeprecationStore['announceDeprecation']> {
    const decided = decideAnnouncement(this.#list, candidate, policy);
    if (decided.ok) this.#list.push({ ...decided.value });
    return decided;
  }
}
