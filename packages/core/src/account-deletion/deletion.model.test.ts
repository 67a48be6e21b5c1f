import fc from 'fast-check';
import { describe, it } from 'vitest';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { deletionModelProperty } from '../testing/models/deletion-model.js';

describe('account deletion, model-based', () => {
  it('deleting any account, in any state, leaves every other account as it was; the sweep credits exactly what only the deleted held', async () => {
    await fc.assert(
      deletionModelProperty(async () => createMemoryPorts()),
      { numRuns: 300 },
    );
  }, 120_000);
});
