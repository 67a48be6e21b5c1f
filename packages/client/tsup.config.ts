import { defineConfig } from 'tsup';

/**
 * The published build: one ESM module and its declarations in dist/. The parts of @strongroom/core
 * a client runs (cohort hash, member upgrade machine, catalog migrator, proofs) are bundled in, so
 * the package installs from a tarball with nothing unpublished behind it; only the registry's own
 * libraries stay dependencies. Neutral platform: the same file runs in Node 20+, browsers and
 * React Native (it needs only fetch, TextEncoder and Web Crypto's getRandomValues).
 */
export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm'],
  platform: 'neutral',
  target: 'es2022',
  outDir: 'dist',
  clean: true,
  sourcemap: true,
  treeshake: true,
  noExternal: ['@strongroom/core'],
  dts: { resolve: true, compilerOptions: { composite: false, incremental: false } },
  tsconfig: 'tsconfig.build.json',
});
