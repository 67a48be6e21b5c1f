/**
 * The port contract suites. Every adapter runs them all through `describePortContracts` from its
 * own test file; a new adapter is proven by passing these and nothing else.
 */
export { describePortContracts } from './all.js';
export { testAccount } from './fixtures.js';
export type { Setup } from './accounts-sessions.js';
export { SUITES, describeContract, missingSuites } from './registry.js';
export type { SuiteName } from './registry.js';
export { describeBlobStoreContract, readAll } from './blobs.js';
export type { BlobSetup } from './blobs.js';
export { describeSignerContract } from './signer.js';
