import { acceptsHistoryEntry } from '../attestation/history.js';
import type {
  AttestationHistoryEntry,
  AttestationKeyRecord,
  AttestationKeyStore,
} from '../ports/attestation-key-store.js';

/** In-memory attestation keys and history: the reference implementation of {@link AttestationKeyStore}. */
export class MemoryAttestationKeyStore implements AttestationKeyStore {
  readonly #keys: AttestationKeyRecord[] = [];
  readonly #history: AttestationHistoryEntry[] = [];

  async listAttestationKeys(): Promise<AttestationKeyRecord[]> {
    return this.#keys.map((k) => ({ ...k }));
  }

  async listAttestationHistory(): Promise<AttestationHistoryEntry[]> {
    return this.#history.map((e) => ({ ...e }));
  }

  async appendAttestationKey(
    key: AttestationKeyRecord,
    entry: AttestationHistoryEntry,
    at: number,
  ): Promise<'appended' | 'stale'> {
    if (
      !acceptsHistoryEntry(this.#history[this.#history.length - 1] ?? null, entry) ||
      entry.kid !== key.kid ||
      entry.publicKey !== key.publicKey
    )
      return 'stale';
    if (this.#keys.some((k) => k.kid === key.kid)) return 'stale';
    for (let i = 0; i < this.#keys.length; i++)
      if (this.#keys[i]!.retiredAt === null) this.#keys[i] = { ...this.#keys[i]!, retiredAt: at };
    this.#keys.push({ ...key, retiredAt: null });
    this.#history.push({ ...entry });
    return 'appended';
  }

  async resealAttestationKey(kid: string, from: string, to: string): Promise<boolean> {
    const i = this.#keys.findIndex((k) => k.kid === kid && k.privateKey === from);
    if (i < 0) return false;
    this.#keys[i] = { ...this.#keys[i]!, privateKey: to };
    return true;
  }
}
