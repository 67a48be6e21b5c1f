/** One entry of the registration allowlist, in the key form core's `allowlistEntry` gives it. */
export interface AllowlistEntry {
  /** A normalized address key (`anna@example.org`) or `@` and a case-folded domain (`@example.org`). */
  readonly entry: string;
  readonly addedAt: number;
}

/**
 * Who may register while `SVC_REGISTRATION=allowlist`: kept in the database, so every process sees
 * a change at its next registration. Entries are stored and compared exactly as given; which
 * entries admit an address is core's rule (`registration/rules.ts`).
 */
export interface RegistrationAllowlist {
  /** Adds the entry; false when it was on the list already (its `addedAt` is kept). */
  allowRegistration(entry: string, at: number): Promise<boolean>;
  /** Removes the entry; false when it was not on the list. */
  disallowRegistration(entry: string): Promise<boolean>;
  /** Every entry, ordered by entry. */
  listAllowedRegistrations(): Promise<AllowlistEntry[]>;
  /** Which of `entries` are on the list (exact matches, in any order). */
  findAllowedRegistrations(entries: readonly string[]): Promise<string[]>;
}
