import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { leaseModelProperty } from '../testing/models/index.js';
import { MemoryDeploymentStore } from '../testing/memory-deployment.js';
import { decideLease, mayReleaseLease } from './lease.js';

describe('decideLease', () => {
  const T = 1_000_000;
  it('a free lease, or one past its expiry, goes to whoever asks, until now + ttl', () => {
    expect(decideLease(null, 'a', T, 60_000)).toEqual({ holder: 'a', expiresAt: T + 60_000 });
    expect(decideLease({ holder: 'b', expiresAt: T }, 'a', T, 60_000)).toEqual({ holder: 'a', expiresAt: T + 60_000 });
  });
  it('a live lease of another holder is refused; its own holder renews it', () => {
    expect(decideLease({ holder: 'b', expiresAt: T + 1 }, 'a', T, 60_000)).toBeNull();
    expect(decideLease({ holder: 'a', expiresAt: T + 1 }, 'a', T, 60_000)).toEqual({
      holder: 'a',
      expiresAt: T + 60_000,
    });
  });
  it('only its holder ends a lease', () => {
    expect(mayReleaseLease({ holder: 'a', expiresAt: T }, 'a')).toBe(true);
    expect(mayReleaseLease({ holder: 'b', expiresAt: T }, 'a')).toBe(false);
    expect(mayReleaseLease(null, 'a')).toBe(false);
  });
});

describe('a lease over the in-memory store, model-based', () => {
  it('is granted exactly when nobody else holds it live, through any interleaving', async () => {
    await fc.assert(
      leaseModelProperty(async () => {
        const store = new MemoryDeploymentStore();
        return [store, store] as const;
      }),
      { numRuns: 100 },
    );
  });
});
