import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { projects, suiteProjects } from './vitest.workspace.js';

/**
 * The settings every run shares, with the projects it runs: a project per package here (for
 * `npx vitest run --project <name>`), one project for the whole suite in vitest.suite.config.ts
 * (`npm test`; vitest.workspace.ts says why).
 */
export function configWith(runProjects: typeof projects) {
  return defineConfig({
    // The project globs are relative to this file, wherever vitest is started from.
    root: fileURLToPath(new URL('.', import.meta.url)),
    test: {
      projects: runProjects,
      // Vitest takes the pool's isolation from here, not from a project's own config: see
      // vitest.workspace.ts for why files share a module context, and which files do not.
      poolOptions: { forks: { isolate: false }, threads: { isolate: false } },
      // Vitest's default is one worker fewer than the cores: a single worker on a 2-core machine, so
      // every file waited on the one before it. Most of the suite's time is spent waiting (on spawned
      // server processes, PostgreSQL, a browser), not computing, so files run two at a time at least.
      maxWorkers: Math.max(2, availableParallelism() - 1),
    },
  });
}

export default configWith(projects);

// The whole suite's config, here so that both share one definition; vitest.suite.config.ts names it.
export const suiteConfig = configWith(suiteProjects);
