import type { TestProjectConfiguration } from 'vitest/config';

// The one list of test projects, one per package. vitest.config.ts hands it to vitest as
// `test.projects` (a workspace file of its own is deprecated). A package with a vitest.config.ts of
// its own (timeouts) names it here, and this list adds what every project shares.
//
// `isolate: false` (set on the pool in vitest.config.ts, where vitest 3.2 reads it): a worker runs
// a project's files one after another in one module context instead of a fresh one per file. Loading the server's module graph again for every file was a fifth of the
// suite (vitest's "collect"). It is safe because tests stub no globals and leave process.env as they
// found it, and what a file records for itself (the contract suites that ran) is keyed by the file.
// Projects never share a context, so a file that mocks a module (vi.mock), which would hand its
// mock to the files after it, is named in `isolated` and runs as a project of its own.
const pkg = (
  dir: string,
  name: string,
  options: { config?: string; isolated?: string[] } = {},
): TestProjectConfiguration[] => {
  const base = options.config ? { extends: `./${dir}/${options.config}` } : {};
  const isolated = options.isolated ?? [];
  return [
    {
      ...base,
      test: { name, root: `./${dir}`, isolate: false, exclude: ['**/node_modules/**', '**/dist/**', ...isolated] },
    },
    ...(isolated.length > 0
      ? [{ ...base, test: { name: `${name} (isolated)`, root: `./${dir}`, isolate: true, include: isolated } }]
      : []),
  ];
};

export const projects: TestProjectConfiguration[] = [
  ...pkg('packages/core', '@strongroom/core', { isolated: ['src/blobs/rules-delegate.test.ts'] }),
  ...pkg('packages/sql-common', '@strongroom/sql-common'),
  ...pkg('packages/port-contracts', '@strongroom/port-contracts'),
  ...pkg('packages/adapters-node', '@strongroom/adapters-node'),
  ...pkg('packages/adapters-sqlite', '@strongroom/adapters-sqlite'),
  ...pkg('packages/adapters-pg', '@strongroom/adapters-pg', { config: 'vitest.config.ts' }),
  ...pkg('packages/client', '@strongroom/client'),
  ...pkg('apps/server', '@strongroom/server'),
  ...pkg('tests', '@strongroom/tests'),
  // Only the bench's own load generator is tested here; the benches themselves are run by hand.
  ...pkg('bench', 'bench'),
  // The repository's own checks: the public API reports.
  ...pkg('scripts', 'scripts'),
];
