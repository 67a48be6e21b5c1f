import fc from 'fast-check';
import { describe, it } from 'vitest';
import { createMemoryPorts } from '../testing/index.js';
import { upgradeModelProperty } from '../testing/models/index.js';

describe('upgrade ceremony, server side, model-based, in memory', () => {
  it('one live intent, fixed expiry at received_at + deadline, quiescence as a filter', async () => {
    await fc.assert(
      upgradeModelProperty(async () => createMemoryPorts()),
      { numRuns: 80 },
    );
  });
});
