import { suiteConfig } from './vitest.config.js';

// The whole suite (`npm test`): vitest.config.ts's settings, with every package's tests in one
// project so that no worker waits for another package's last file (vitest.workspace.ts).
export default suiteConfig;
