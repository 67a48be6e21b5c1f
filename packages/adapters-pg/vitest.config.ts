import { defineProject } from 'vitest/config';

// PGlite compiles its WebAssembly on first use (seconds on a busy machine), and the PG_URL scratch
// databases are created per file: both need more than vitest's 5 s defaults.
export default defineProject({
  test: { name: '@strongroom/adapters-pg', testTimeout: 30_000, hookTimeout: 60_000 },
});
