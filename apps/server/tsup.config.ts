import { defineConfig } from 'tsup';

/**
 * The server compiled for `npm start` and `npm run cli`: two entry points in dist/, plain ES
 * modules that Node runs without a TypeScript loader. The workspace packages (core, the adapters)
 * export their TypeScript sources, so they are bundled in; every registry package stays an import
 * resolved from node_modules at run time (native modules, the AWS SDK, swagger-ui-dist's files).
 * Files that are not code are found by package, not by their place next to the code: the
 * migrations through each adapter's package.json, Swagger UI through its package.
 */
export default defineConfig({
  entry: { main: 'src/main.ts', cli: 'src/cli.ts' },
  format: ['esm'],
  platform: 'node',
  target: 'node20',
  outDir: 'dist',
  clean: true,
  sourcemap: true,
  // The S3 store is a dynamic import so a filesystem deployment never loads the AWS SDK: keep it a chunk of its own.
  splitting: true,
  skipNodeModulesBundle: true,
  noExternal: [/^@strongroom\//],
  esbuildOptions(options) {
    // The workspace packages' exports point at their sources already; the condition is what tsc and the client use.
    options.conditions = ['@strongroom/source'];
  },
  tsconfig: 'tsconfig.json',
});
