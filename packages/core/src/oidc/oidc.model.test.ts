import fc from 'fast-check';
import { describe, it } from 'vitest';
import { createMemoryPorts } from '../testing/index.js';
import { oidcModelProperty } from '../testing/models/index.js';

describe('OpenID flow, model-based, in memory', () => {
  it('redeems each state and login code at most once and never after its lifetime', { timeout: 60_000 }, async () => {
    await fc.assert(
      oidcModelProperty(async () => createMemoryPorts()),
      { numRuns: 60 },
    );
  });
});
