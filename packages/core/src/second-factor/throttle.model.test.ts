import fc from 'fast-check';
import { describe, it } from 'vitest';
import { createMemoryPorts } from '../testing/index.js';
import { totpThrottleModelProperty } from '../testing/models/index.js';

describe('per-account second-factor throttle, model-based, in memory', () => {
  it('holds sign-in exactly as the rule says, with the exact Retry-After, after every step', async () => {
    await fc.assert(
      totpThrottleModelProperty(async () => createMemoryPorts()),
      { numRuns: 100 },
    );
  }, 120_000);
});
