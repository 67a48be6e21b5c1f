import fc from 'fast-check';
import { describe, it } from 'vitest';
import { createMemoryPorts } from '../testing/memory-ports.js';
import { registrationModelProperty } from '../testing/models/registration-model.js';

describe('who may register, model-based', () => {
  it('matches the model after every step, through two services over one in-memory store', async () => {
    await fc.assert(
      registrationModelProperty(async () => {
        const ports = createMemoryPorts();
        return [ports, ports];
      }),
      { numRuns: 80 },
    );
  });
});
