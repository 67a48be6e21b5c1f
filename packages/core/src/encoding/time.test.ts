import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { iso, isoOrNull } from './respond.js';

describe('iso', () => {
  it('writes exactly what Date#toISOString writes, across years 0000-9999 and beyond', () => {
    const fourDigitYears = fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 });
    const anyDate = fc.integer({ min: -8.64e15, max: 8.64e15 });
    const nearEdges = fc.constantFrom(0, -1, 1, 951_782_400_000, 951_868_799_999, 4_107_542_400_000, -62_167_219_200_001, 253_402_300_800_000);
    fc.assert(
      fc.property(fc.oneof(fourDigitYears, anyDate, nearEdges), (ms) => {
        expect(iso(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 20_000 },
    );
  });
  it('keeps null for absent timestamps', () => {
    expect(isoOrNull(null)).toBeNull();
    expect(isoOrNull(1_795_255_200_123)).toBe('2026-11-21T10:00:00.123Z');
  });
});
