import fc from 'fast-check';
import { describe, it } from 'vitest';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { resumableModelProperty } from '../testing/models/resumable-model.js';

describe('resumable uploads, model-based', () => {
  it('HEAD answers the acknowledged bytes after every PATCH (at, behind, past the offset; checksums; races of two processes), termination and expiry', async () => {
    await fc.assert(
      resumableModelProperty(async () => createMemoryPorts()),
      { numRuns: 150 },
    );
  }, 120_000);
});
