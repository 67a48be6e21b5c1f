import fc from 'fast-check';
import { describe, it } from 'vitest';
import { MemoryStore, MemoryTotpStore } from '../testing/index.js';
import { totpModelProperty } from '../testing/models/index.js';

describe('TOTP enrollment and challenged sign-in, model-based', () => {
  it('matches the model and keeps its invariants after every step', async () => {
    await fc.assert(
      totpModelProperty(async () => ({ store: new MemoryStore(), totpStore: new MemoryTotpStore() })),
      { numRuns: 150 },
    );
  });
});
