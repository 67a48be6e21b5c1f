import type { AllowlistEntry, RegistrationAllowlist } from '../ports/registration-allowlist.js';

/** The registration allowlist in memory: the reference implementation of {@link RegistrationAllowlist}. */
export class MemoryRegistrationAllowlist implements RegistrationAllowlist {
  readonly #entries = new Map<string, number>();

  async allowRegistration(entry: string, at: number): Promise<boolean> {
    if (this.#entries.has(entry)) return false;
    this.#entries.set(entry, at);
    return true;
  }

  async disallowRegistration(entry: string): Promise<boolean> {
    return this.#entries.delete(entry);
  }

  async listAllowedRegistrations(): Promise<AllowlistEntry[]> {
    return [...this.#entries]
      .map(([entry, addedAt]) => ({ entry, addedAt }))
      .sort((a, b) => (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0));
  }

  async findAllowedRegistrations(entries: readonly string[]): Promise<string[]> {
    return [...new Set(entries)].filter((e) => this.#entries.has(e));
  }
}
