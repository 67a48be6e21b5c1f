/**
 * Which contract suites ran against which adapter. `describePortContracts` records each suite it
 * declares, and the meta-test compares that against SUITES, so no suite can quietly go unused.
 */
export const SUITES = ['accounts', 'albums', 'cohorts', 'devices', 'quota', 'sessions', 'signing-keys', 'totp', 'handles', 'peer-buckets', 'capability-revocations'] as const;

const ran = new Map<string, Set<string>>();

export function noteSuite(adapter: string, suite: string): void {
  const set = ran.get(adapter) ?? new Set<string>();
  set.add(suite);
  ran.set(adapter, set);
}

export function suitesRunFor(adapter: string): string[] {
  return [...(ran.get(adapter) ?? [])].sort();
}
