import { defineWorkspace } from 'vitest/config';

// One project per package; each may carry its own vitest.config.ts.
export default defineWorkspace(['packages/*', 'apps/*']);
