import type { TestProjectConfiguration } from 'vitest/config';

// The one list of test packages, and the two ways of running them: a project per package
// (vitest.config.ts, for `--project`) and one project for the whole suite (vitest.suite.config.ts,
// for `npm test`). A workspace file of its own is deprecated: the configs import these lists.
//
// `isolate: false` (set on the pool in vitest.config.ts, where vitest 3.2 reads it): a worker runs
// a project's files one after another in one module context instead of a fresh one per file. Loading the server's module graph again for every file was a fifth of the
// suite (vitest's "collect"). It is safe because tests stub no globals and leave process.env as they
// found it, and what a file records for itself (the contract suites that ran) is keyed by the file.
// So no test file mocks a module (vi.mock would hand its mock to the files after it in the same
// worker): a test that must replace an export spies on it (vi.spyOn) and restores it afterwards.
interface Package {
  readonly dir: string;
  readonly name: string;
  /** Timeouts longer than vitest's defaults, where the package's tests need them. */
  readonly timeouts?: { readonly testTimeout: number; readonly hookTimeout: number };
}

const PACKAGES: readonly Package[] = [
  { dir: 'packages/core', name: '@strongroom/core' },
  { dir: 'packages/sql-common', name: '@strongroom/sql-common' },
  { dir: 'packages/port-contracts', name: '@strongroom/port-contracts' },
  { dir: 'packages/adapters-node', name: '@strongroom/adapters-node' },
  { dir: 'packages/adapters-sqlite', name: '@strongroom/adapters-sqlite' },
  // PGlite compiles its WebAssembly on first use (seconds on a busy machine), and the PG_URL scratch
  // databases are created per file: both need more than vitest's 5 s defaults.
  {
    dir: 'packages/adapters-pg',
    name: '@strongroom/adapters-pg',
    timeouts: { testTimeout: 30_000, hookTimeout: 60_000 },
  },
  { dir: 'packages/client', name: '@strongroom/client' },
  { dir: 'apps/server', name: '@strongroom/server' },
  { dir: 'tests', name: '@strongroom/tests' },
  // Only the bench's own load generator is tested here; the benches themselves are run by hand.
  { dir: 'bench', name: 'bench' },
  // The repository's own checks: the public API reports.
  { dir: 'scripts', name: 'scripts' },
];

const EXCLUDED = ['**/node_modules/**', '**/dist/**'];

/** One project per package, for running a package's tests on their own (`--project <name>`). */
export const projects: TestProjectConfiguration[] = PACKAGES.map(({ dir, name, timeouts }) => ({
  test: { name, root: `./${dir}`, isolate: false, exclude: EXCLUDED, ...timeouts },
}));

/**
 * Every package's tests as one project, for the whole suite (`npm test`, vitest.suite.config.ts).
 * Vitest runs the projects of a run one after another, waiting for each one's last file before it
 * starts the next: with a project per package, one worker sat idle through the tail of each. One
 * project keeps every worker busy to the end. Its timeouts are the longest any package asks for.
 */
export const suiteProjects: TestProjectConfiguration[] = [
  {
    test: {
      name: 'strongroom',
      root: '.',
      isolate: false,
      include: PACKAGES.map(({ dir }) => `${dir}/**/*.{test,spec}.?(c|m)[jt]s?(x)`),
      exclude: EXCLUDED,
      testTimeout: Math.max(5_000, ...PACKAGES.map((p) => p.timeouts?.testTimeout ?? 0)),
      hookTimeout: Math.max(10_000, ...PACKAGES.map((p) => p.timeouts?.hookTimeout ?? 0)),
    },
  },
];
