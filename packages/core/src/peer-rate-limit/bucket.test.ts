import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryDiscoveryStore, memoryDiscoveryState } from '../testing/index.js';
import { peerBucketModelProperty } from '../testing/models/index.js';
import { admissionBound, fullBucket, takeToken, UNITS_PER_TOKEN } from './bucket.js';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');

describe('token bucket arithmetic', () => {
  it('starts full: rate tokens at one instant, then a refusal with the wait until the next', () => {
    let bucket = null;
    for (let i = 0; i < 600; i++) {
      const d = takeToken(bucket, T0, 600);
      expect(d.admitted).toBe(true);
      bucket = d.bucket;
    }
    const refused = takeToken(bucket, T0, 600);
    expect(refused).toEqual({ admitted: false, bucket: { level: 0, updatedAt: T0 }, retryAfterS: 1 });
    // 600 a minute is one every 100 ms.
    expect(takeToken(refused.bucket, T0 + 99, 600).admitted).toBe(false);
    expect(takeToken(refused.bucket, T0 + 100, 600).admitted).toBe(true);
  });

  it('says how many whole seconds until a token at a slow rate', () => {
    const empty = { level: 0, updatedAt: T0 };
    expect(takeToken(empty, T0, 1).retryAfterS).toBe(60);
    expect(takeToken(empty, T0 + 30_000, 1).retryAfterS).toBe(30);
    expect(takeToken(empty, T0 + 59_001, 1).retryAfterS).toBe(1);
    expect(takeToken(empty, T0 + 60_000, 1).admitted).toBe(true);
  });

  it('never fills past its capacity however long it idles', () => {
    const d = takeToken({ level: 0, updatedAt: T0 }, T0 + 10 * 365 * 86_400_000, 5);
    expect(d.bucket.level).toBe(4 * UNITS_PER_TOKEN);
  });

  it('ignores a clock that went backwards (another process a little behind)', () => {
    const b = { level: UNITS_PER_TOKEN / 2, updatedAt: T0 };
    const d = takeToken(b, T0 - 5_000, 1);
    expect(d.admitted).toBe(false);
    expect(d.bucket).toEqual(b);
    expect(d.retryAfterS).toBe(35);
  });

  it('refuses nonsense rates', () => {
    expect(() => takeToken(null, T0, 0)).toThrow(RangeError);
    expect(() => takeToken(null, T0, 1.5)).toThrow(RangeError);
  });

  it('never admits more than a full bucket plus refill in any window (random schedules)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 20_000 }), { maxLength: 200 }),
        (rate, gaps) => {
          let bucket = fullBucket(rate, T0);
          let now = T0;
          const admitted: number[] = [];
          for (const gap of gaps) {
            now += gap;
            const d = takeToken(bucket, now, rate);
            bucket = d.bucket;
            if (d.admitted) admitted.push(now);
          }
          for (let i = 0; i < admitted.length; i++) {
            for (let j = i; j < admitted.length; j++) {
              expect(j - i + 1).toBeLessThanOrEqual(admissionBound(rate, admitted[j]! - admitted[i]!));
            }
          }
        },
      ),
    );
  });
});

describe('per-peer bucket, model-based, two memory stores sharing one state', () => {
  it('matches the rule after every step and never over-admits', async () => {
    const seed = Date.now();
    try {
      await fc.assert(
        peerBucketModelProperty(async () => {
          const state = memoryDiscoveryState();
          return [new MemoryDiscoveryStore(state), new MemoryDiscoveryStore(state)] as const;
        }),
        { numRuns: 200, seed },
      );
    } catch (err) {
      console.error(`peer bucket model failed with seed ${seed}`);
      throw err;
    }
  });
});
