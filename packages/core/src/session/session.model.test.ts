import fc from 'fast-check';
import { describe, it } from 'vitest';
import { MemoryStore } from '../testing/memory-store.js';
import { sessionModelProperty } from '../testing/models/session-model.js';

describe('session ledger, model-based', () => {
  it('matches the model after every step (in-memory store)', async () => {
    await fc.assert(
      sessionModelProperty(async () => new MemoryStore()),
      { numRuns: 60 },
    );
  });
});
