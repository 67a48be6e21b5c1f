import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The tests Stryker runs against each mutant: core's own tests and the port-contract suites on the
// memory store (core's tests alone miss the rules a store-level contract pins). This file lives in a
// folder of its own so vitest finds no `vitest.workspace.ts` beside it, and it extends nothing: the
// repository's config shares one module context per worker (`isolate: false`), which would let one
// test file's mutant state leak into the next.
const repo = fileURLToPath(new URL('..', import.meta.url));
const core = `${repo}packages/core/src/`;

export default defineConfig({
  root: repo,
  resolve: {
    // The workspace link `node_modules/@strongroom/core` points at the checkout, outside Stryker's
    // sandbox, so tests importing the package would run the unmutated source. Resolve it in place.
    alias: [
      { find: /^@strongroom\/core\/testing\/models$/, replacement: `${core}testing/models/index.ts` },
      { find: /^@strongroom\/core\/testing$/, replacement: `${core}testing/index.ts` },
      { find: /^@strongroom\/core$/, replacement: `${core}index.ts` },
    ],
  },
  test: {
    include: ['packages/core/src/**/*.test.ts', 'packages/port-contracts/src/memory.test.ts'],
    // Tests of the tree's shape, not of any rule: they read the checkout and find nothing to kill.
    exclude: ['**/node_modules/**', 'packages/core/src/architecture.test.ts', 'packages/core/src/purity.test.ts'],
    isolate: true,
    // Under Stryker the tests share the machine with its other test process and its instrumented
    // code: the property tests' five seconds are too few. A mutant that loops is still stopped by
    // Stryker's own timeout.
    testTimeout: 60_000,
    poolOptions: { threads: { isolate: true }, forks: { isolate: true } },
  },
});
