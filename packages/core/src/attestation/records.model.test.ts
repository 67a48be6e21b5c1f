import fc from 'fast-check';
import { describe, it } from 'vitest';
import { MemoryAttestationKeyStore } from '../testing/memory-attestation.js';
import { MemoryDeprecationStore } from '../testing/memory-deprecations.js';
import { recordsModelProperty } from '../testing/models/records-model.js';

describe('deprecations and attestation keys, model-based, in memory', () => {
  it('match the model after every step, through two processes', async () => {
    await fc.assert(
      recordsModelProperty(async () => ({
        deprecations: new MemoryDeprecationStore(),
        attestation: new MemoryAttestationKeyStore(),
      })),
      { numRuns: 30 },
    );
  }, 60_000);
});
