import fc from 'fast-check';
import { describe, it } from 'vitest';
import { MemoryQuotaStore, quotaModelProperty } from '../testing/index.js';

describe('quota ledger, model-based, in memory', () => {
  it('matches the model after every step (uploads, dedup, cancels, expiry, trash, purge, sweeps, sponsors, drops, clock)', async () => {
    await fc.assert(quotaModelProperty(async () => new MemoryQuotaStore()), { numRuns: 150 });
  });
});
