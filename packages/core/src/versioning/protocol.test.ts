import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkAlbumPin, isProtocolVersion, negotiateProtocol } from './protocol.js';

const W = { min: '2026-03-01', max: '2026-11-01' };

describe('negotiateProtocol', () => {
  it('accepts the window inclusive, for reads and writes', () => {
    for (const v of ['2026-03-01', '2026-07-15', '2026-11-01']) {
      expect(negotiateProtocol(v, W, { write: true })).toEqual({ ok: true, value: { version: v } });
    }
  });
  it('refuses missing, malformed and too-new versions for everything', () => {
    for (const v of [
      undefined,
      '',
      '2026-11-02',
      '2026-02-29',
      '2024-02-30',
      '26-03-01',
      '2026-03-01T00:00:00Z',
      ' 2026-03-01',
    ]) {
      expect(negotiateProtocol(v, W, { write: false })).toMatchObject({
        ok: false,
        code: 'error.protocol.unsupported',
        data: { supported_min: W.min, supported_max: W.max },
      });
    }
  });
  it('lets an old client read but not write', () => {
    expect(negotiateProtocol('2026-01-01', W, { write: false }).ok).toBe(true);
    expect(negotiateProtocol('2026-01-01', W, { write: true })).toMatchObject({
      ok: false,
      code: 'error.protocol.below_min',
    });
  });
  it('orders dates lexicographically, which is chronological', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true }),
        fc.date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true }),
        (a, b) => {
          const [x, y] = [a.toISOString().slice(0, 10), b.toISOString().slice(0, 10)];
          expect(isProtocolVersion(x) && isProtocolVersion(y)).toBe(true);
          expect(x < y).toBe(a.getTime() - (a.getTime() % 86_400_000) < b.getTime() - (b.getTime() % 86_400_000));
        },
      ),
    );
  });
  it('accepts exactly the strings that are real dates, against the Date parser as the reference', () => {
    const reference = (s: string) => {
      const t = new Date(`${s}T00:00:00Z`);
      return /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(t.getTime()) && t.toISOString().slice(0, 10) === s;
    };
    const chars = fc.constantFrom(...'0123456789-/ a'.split(''));
    const nearDates = fc
      .tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }))
      .map(([y, m, d]) => `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`);
    fc.assert(
      fc.property(fc.oneof(nearDates, fc.string({ unit: chars, minLength: 8, maxLength: 11 })), (s) => {
        expect(isProtocolVersion(s)).toBe(reference(s));
      }),
      { numRuns: 2000 },
    );
  });
  it('knows leap years', () => {
    expect(isProtocolVersion('2028-02-29')).toBe(true);
    expect(isProtocolVersion('2100-02-29')).toBe(false);
    expect(isProtocolVersion('2000-02-29')).toBe(true);
  });
  it('refuses writes below an album pin with the pin named', () => {
    expect(checkAlbumPin('2026-05-01', '2026-06-01', W)).toMatchObject({
      ok: false,
      code: 'error.protocol.below_album_pin',
      data: { album_pin: '2026-06-01' },
    });
    expect(checkAlbumPin('2026-06-01', '2026-06-01', W).ok).toBe(true);
  });
});
