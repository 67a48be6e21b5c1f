import { describe, expect, it } from 'vitest';
import { addressKeyOf } from './rules.js';

describe('addressKeyOf: the comparison key of an address', () => {
  it('is its own key for every code point: one folding settles it (ẞ, whose lower case is ß, once took two)', () => {
    const unsettled: string[] = [];
    for (let cp = 0; cp < 0x110000; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const key = addressKeyOf(String.fromCodePoint(cp));
      if (addressKeyOf(key) !== key) unsettled.push(cp.toString(16));
    }
    expect(unsettled).toEqual([]);
  });
  it('folds the German sharp s in both cases with "ss"', () => {
    expect(new Set(['straße', 'STRASSE', 'STRAẞE', 'straẞe', 'Strasse'].map(addressKeyOf))).toEqual(
      new Set(['strasse']),
    );
  });
});
