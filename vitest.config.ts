import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { projects } from './vitest.workspace.js';

export default defineConfig({
  // The project globs are relative to this file, wherever vitest is started from.
  root: fileURLToPath(new URL('.', import.meta.url)),
  test: {
    projects,
  },
});
