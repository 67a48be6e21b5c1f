// The one list of test projects: one per package, each may carry its own vitest.config.ts.
// vitest.config.ts hands it to vitest as `test.projects` (the workspace file itself is deprecated).
export const projects = ['packages/*', 'apps/*'];
