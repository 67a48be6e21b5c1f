import fc from 'fast-check';
import { describe, it } from 'vitest';
import { createMemoryPorts } from '../testing/index.js';
import { signInThrottleModelProperty } from '../testing/models/index.js';

describe('password guessing, model-based, in memory', () => {
  it('refuses and judges every login exactly as the rule says, with the exact Retry-After, and never more than ten wrong passwords per address an hour without a ticket', async () => {
    await fc.assert(
      signInThrottleModelProperty(async () => createMemoryPorts()),
      { numRuns: 100 },
    );
  }, 120_000);
});
