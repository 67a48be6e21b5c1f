import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTimestamp, parseRfc3339Instant } from './time.js';

describe('isoTimestamp', () => {
  it('writes exactly what Date#toISOString writes, across years 0000-9999 and beyond', () => {
    const fourDigitYears = fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 });
    const anyDate = fc.integer({ min: -8.64e15, max: 8.64e15 });
    const nearEdges = fc.constantFrom(
      0,
      -1,
      1,
      951_782_400_000,
      951_868_799_999,
      4_107_542_400_000,
      -62_167_219_200_001,
      253_402_300_800_000,
    );
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

describe('parseRfc3339Instant', () => {
  it('refuses what Date.parse would roll over or guess', () => {
    for (const text of [
      '2027-02-30T00:00:00Z',
      '2027-06-01T24:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-00-01T00:00:00Z',
      '2026-01-00T00:00:00Z',
      '2027-06-01T23:60:00Z',
      '2027-06-01T23:59:60Z',
      '2027-02-29T00:00:00Z',
      '2100-02-29T00:00:00Z',
      '2027-06-01T00:00:00+24:00',
      '2027-06-01T00:00:00+01:60',
      '2027-06-01T00:00:00',
      '2027-06-01',
      'next tuesday',
      '2027-06-01T00:00:00Z ',
      '+002027-06-01T00:00:00Z',
    ]) {
      expect(parseRfc3339Instant(text), text).toBeNull();
    }
  });
  it('reads real instants exactly, whatever the zone or precision', () => {
    expect(parseRfc3339Instant('2028-02-29T01:30:00+02:00')).toBe(Date.parse('2028-02-28T23:30:00Z'));
    expect(parseRfc3339Instant('2000-02-29T23:59:59.999Z')).toBe(Date.parse('2000-02-29T23:59:59.999Z'));
    expect(parseRfc3339Instant('2027-03-01t00:00z')).toBe(Date.parse('2027-03-01T00:00:00Z'));
    expect(parseRfc3339Instant('2027-03-01T00:00:00.1234-05:30')).toBe(Date.parse('2027-03-01T05:30:00.123Z'));
    expect(parseRfc3339Instant('0050-01-01T00:00:00Z')).toBe(Date.parse('0050-01-01T00:00:00Z'));
    fc.assert(
      fc.property(fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }), (ms) => {
        expect(parseRfc3339Instant(isoTimestamp(ms))).toBe(ms);
      }),
      { numRuns: 5_000 },
    );
  });
});
