import { guard, ok, type Result } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { AllowlistEntry, RegistrationAllowlist } from '../ports/registration-allowlist.js';
import type { NormalizedAddress } from '../profile/rules.js';
import { allowlistCandidates, allowlistEntry, decideRegistration, type RegistrationMode } from './rules.js';

export interface RegistrationGateDeps {
  readonly mode: RegistrationMode;
  readonly allowlist: RegistrationAllowlist;
  readonly clock: Clock;
}

/**
 * Whether a new account may be created, asked by register and by a first OpenID sign-in before
 * anything is hashed or written; and the operator's edits of the allowlist.
 */
export class RegistrationGate {
  readonly #d: RegistrationGateDeps;

  constructor(deps: RegistrationGateDeps) {
    this.#d = deps;
  }

  get mode(): RegistrationMode {
    return this.#d.mode;
  }

  async admit(address: NormalizedAddress | null): Promise<Result<void, 'error.auth.registration_closed'>> {
    // The list is read at every registration (never cached): a change is seen by every process at once.
    const listed =
      this.#d.mode === 'allowlist' && address !== null
        ? await guard('error.store.unavailable', 'reading the registration allowlist', () =>
            this.#d.allowlist.findAllowedRegistrations(allowlistCandidates(address)),
          )
        : [];
    return decideRegistration(this.#d.mode, address, listed);
  }

  async allow(input: string): Promise<Result<{ entry: string; added: boolean }, 'error.request.invalid'>> {
    const entry = allowlistEntry(input);
    if (!entry.ok) return entry;
    const added = await this.#d.allowlist.allowRegistration(entry.value, this.#d.clock.now());
    return ok({ entry: entry.value, added });
  }

  async disallow(input: string): Promise<Result<{ entry: string; removed: boolean }, 'error.request.invalid'>> {
    const entry = allowlistEntry(input);
    if (!entry.ok) return entry;
    return ok({ entry: entry.value, removed: await this.#d.allowlist.disallowRegistration(entry.value) });
  }

  list(): Promise<AllowlistEntry[]> {
    return this.#d.allowlist.listAllowedRegistrations();
  }
}
