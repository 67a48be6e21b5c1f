import { beforeEach, describe, expect } from 'vitest';

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
  'census',
  'cohorts',
  'deployment',
  'deprecations',
  'devices',
  'erasure',
  'handles',
  'identity-links',
  'links',
  'oidc-flows',
  'peer-buckets',
  'quota',
  'registration-allowlist',
  'schema',
  'second-factor',
  'sign-in',
  'sessions',
  'signing-keys',
  'sponsorship',
  'sync',
  'totp',
  'upload-segments',
] as const;
export type SuiteName = (typeof SUITES)[number];

/**
 * Keyed by test file and adapter: when a project runs its files in one module context (vitest's
 * `isolate: false`), a suite that ran in an earlier file must not count for this one.
 */
const ran = new Map<string, Set<string>>();
const keyOf = (adapter: string): string => `${expect.getState().testPath ?? ''}\0${adapter}`;

/** Declares one contract suite for one adapter; its tests count towards that adapter's suites. */
export function describeContract(adapter: string, suite: SuiteName, title: string, body: () => void): void {
  describe(`${title} contract: ${adapter}`, () => {
    beforeEach(() => {
      const key = keyOf(adapter);
      const set = ran.get(key) ?? new Set<string>();
      set.add(suite);
      ran.set(key, set);
    });
    body();
  });
}

/** The suites of SUITES none of whose tests has run for this adapter (so far in this file). */
export function missingSuites(adapter: string): string[] {
  const done = ran.get(keyOf(adapter)) ?? new Set<string>();
  return SUITES.filter((s) => !done.has(s));
}
