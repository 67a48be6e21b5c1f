import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTimestamp } from './time.js';

describe('isoTimestamp', () => {
  it('writes exactly what Date#toISOString writes, across years 0000-9999 and beyond', () => {
    const fourDigitYears = fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 });
    const anyDate = fc.integer({ min: -8.64e15, max: 8.64e15 });
    const nearEdges = fc.constantFrom(0, -1, 1, 951_782_400_000, 951_868_799_999, 4_107_542_400_000, -62_167_219_200_001, 253_402_300_800_000);
    fc.assert(
      fc.property(fc.oneof(fourDigitYears, anyDate, nearEdges), (ms) => {
        expect(isoTimestamp(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 20_000 },
    );
  });
  it('writes a known instant', () => {
    expect(isoTimestamp(1_795_255_200_123)).toBe('2026-11-21T10:00:00.123Z');
    expect(isoTimestamp(951_825_600_007)).toBe('2000-02-29T12:00:00.007Z');
  });
});
