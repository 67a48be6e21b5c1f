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
  },
});
