import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { projects } from './vitest.workspace.js';

export default defineConfig({
  // The project globs are relative to this file, wherever vitest is started from.
  root: fileURLToPath(new URL('.', import.meta.url)),
  test: {
    projects,
    // Vitest takes the pool's isolation from here, not from a project's own config: see
    // vitest.workspace.ts for why files share a module context, and which files do not.
    poolOptions: { forks: { isolate: false }, threads: { isolate: false } },
    // Vitest's default is one worker fewer than the cores: a single worker on a 2-core machine, so
    // every file waited on the one before it. Most of the suite's time is spent waiting (on spawned
    // server processes, PostgreSQL, a browser), not computing, so files run two at a time at least.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
