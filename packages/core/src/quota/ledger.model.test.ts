import fc from 'fast-check';
import { describe, it } from 'vitest';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { quotaModelProperty } from '../testing/models/quota-model.js';

describe('quota ledger, model-based', () => {
  it('matches the model after every step (uploads, dedup, cancels, expiry, trash, purge, sweeps, sponsors, drops through a link, federated caching, clock)', async () => {
    await fc.assert(
      quotaModelProperty(async () => createMemoryPorts()),
      { numRuns: 100 },
    );
  }, 120_000);
});
