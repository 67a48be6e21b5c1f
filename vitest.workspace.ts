import type { TestProjectConfiguration } from 'vitest/config';

// The one list of test projects, one per package. vitest.config.ts hands it to vitest as
// `test.projects` (a workspace file of its own is deprecated). A package with a vitest.config.ts of
// its own (timeouts) names it here, and this list adds what every project shares.
//
// `isolate: false`: a worker runs its files one after another in one module context instead of a
// fresh one per file. Loading the server's module graph again for every file was a fifth of the
// suite (vitest's "collect"). It is safe because no test mocks modules, stubs globals or leaves
// process.env changed, and what a file records for itself (the contract suites that ran) is keyed
// by the file. A file that needs a fresh context can say so in its project here.
const pkg = (dir: string, name: string, config?: string): TestProjectConfiguration => ({
  ...(config ? { extends: `./${dir}/${config}` } : {}),
  test: { name, root: `./${dir}`, isolate: false },
});

export const projects: TestProjectConfiguration[] = [
  pkg('packages/core', '@strongroom/core'),
  pkg('packages/sql-common', '@strongroom/sql-common'),
  pkg('packages/port-contracts', '@strongroom/port-contracts'),
  pkg('packages/adapters-node', '@strongroom/adapters-node'),
  pkg('packages/adapters-sqlite', '@strongroom/adapters-sqlite'),
  pkg('packages/adapters-pg', '@strongroom/adapters-pg', 'vitest.config.ts'),
  pkg('packages/client', '@strongroom/client'),
  pkg('apps/server', '@strongroom/server'),
  pkg('tests', '@strongroom/tests'),
];
