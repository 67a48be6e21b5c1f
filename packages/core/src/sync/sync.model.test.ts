import fc from 'fast-check';
import { describe, it } from 'vitest';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { syncModelProperty } from '../testing/models/sync-model.js';

describe('library sync, model-based', () => {
  it('replaying the pages any client read rebuilds exactly the live state, whatever writes and reads interleave; 410 past the horizon (or a pruned removal it had not reached), never within it otherwise', async () => {
    await fc.assert(
      syncModelProperty(async () => createMemoryPorts()),
      { numRuns: 150 },
    );
  }, 120_000);
});
