import { beforeEach, describe } from 'vitest';

/**
 * Which contract suites ran against which adapter. A suite's tests record themselves when they
 * actually run (a hook inside the suite's describe), not when they are declared, so a suite that
 * is skipped, filtered out or never declared for an adapter shows up as missing.
 */
export const SUITES = [
  'accounts',
  'albums',
  'attestation',
  'capability-revocations',
  'cohorts',
  'deployment',
  'deprecations',
  'devices',
  'handles',
  'identity-links',
  'links',
  'oidc-flows',
  'peer-buckets',
  'quota',
  'schema',
  'second-factor',
  'sessions',
  'signing-keys',
  'sponsorship',
  'totp',
] as const;
export type SuiteName = (typeof SUITES)[number];

const ran = new Map<string, Set<string>>();

/** Declares one contract suite for one adapter; its tests count towards that adapter's suites. */
export function describeContract(adapter: string, suite: SuiteName, title: string, body: () => void): void {
  describe(`${title} contract: ${adapter}`, () => {
    beforeEach(() => {
      const set = ran.get(adapter) ?? new Set<string>();
      set.add(suite);
      ran.set(adapter, set);
    });
    body();
  });
}

/** The suites of SUITES none of whose tests has run for this adapter (so far in this file). */
export function missingSuites(adapter: string): string[] {
  const done = ran.get(adapter) ?? new Set<string>();
  return SUITES.filter((s) => !done.has(s));
}
