// Mutation testing over core's rule files: every mutant Stryker makes in them should fail a test.
// `npm run mutation` runs all of them; `npm run mutation:changed` only the ones a branch touches
// (scripts/mutation-changed.mjs). docs/mutation.md lists the survivors and why each is left.

/** The files that hold core's rules: the pure machines, rule sets and decisions. */
export const ruleFiles = [
  'packages/core/src/access/rules.ts',
  'packages/core/src/account-deletion/rules.ts',
  'packages/core/src/blobs/rules.ts',
  'packages/core/src/discovery/rules.ts',
  'packages/core/src/links/rules.ts',
  'packages/core/src/oidc/rules.ts',
  'packages/core/src/peer-blob-cache/rules.ts',
  'packages/core/src/profile/rules.ts',
  'packages/core/src/quota/ledger-rules.ts',
  'packages/core/src/quota/machine.ts',
  'packages/core/src/registration/rules.ts',
  'packages/core/src/session/machine.ts',
  'packages/core/src/sign-in-throttle/rules.ts',
  'packages/core/src/sponsorship/rules.ts',
  'packages/core/src/totp/machine.ts',
  'packages/core/src/upload/decisions.ts',
  'packages/core/src/upload/machine.ts',
];

/**
 * The score below which `npm run mutation:changed` fails, for each rule file it mutates on its own
 * (Stryker's `thresholds.break` would judge the run as a whole, where one well-tested file hides a
 * weak one). Every rule file scores at least this, its survivors explained in docs/mutation.md.
 */
export const fileScoreFloor = 90;

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  mutate: ruleFiles,
  testRunner: 'vitest',
  vitest: { configFile: 'mutation/vitest.config.ts' },
  plugins: ['@stryker-mutator/vitest-runner'],
  // No type-checker plugin: it would compile the project once per mutant batch, more than the tests
  // cost. A mutant only a type error would reject runs, and the tests judge it.
  checkers: [],
  // A static mutant (one in a value computed at module load, such as a default policy) cannot be
  // traced to the tests that cover it, so each reruns every related test file: an eighth of the
  // mutants, more than half of the time. The default run skips them; `npm run mutation:static`
  // (MUTATION_STATIC=1) runs them too (docs/mutation.md).
  ignoreStatic: process.env.MUTATION_STATIC !== '1',
  // The machine is shared: two test processes at most.
  concurrency: 2,
  // The sandbox needs the sources and the tests, not the server, the bench or the docs.
  ignorePatterns: [
    'apps',
    'bench',
    'docs',
    'tests',
    'packages/adapters-*',
    'packages/client',
    'packages/sql-common',
    '**/dist',
    '**/dist-types',
    'reports',
    '.stryker-tmp',
  ],
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  thresholds: { high: 90, low: 80, break: null },
  timeoutMS: 10000,
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
