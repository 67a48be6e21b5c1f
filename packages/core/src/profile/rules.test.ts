import { describe, expect, it } from 'vitest';
import type { AccountRecord } from '../ports/account-store.js';
import {
  addressKeyOf,
  checkPassword,
  couldBePassword,
  findAccountByAddress,
  holdsInvisible,
  normalizeAddress,
  normalizeDisplayName,
  type NormalizedAddress,
} from './rules.js';

/** A code point outside the Basic Multilingual Plane: one character, two UTF-16 units. */
const ASTRAL = '\u{1F600}';

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

describe('normalizeDisplayName', () => {
  it('trims the name; null or nothing but spaces clears it', () => {
    expect(normalizeDisplayName('  Ann Lee \n')).toEqual({ ok: true, value: 'Ann Lee' });
    expect(normalizeDisplayName(null)).toEqual({ ok: true, value: null });
    expect(normalizeDisplayName('')).toEqual({ ok: true, value: null });
    expect(normalizeDisplayName(' \t ')).toEqual({ ok: true, value: null });
  });

  it('refuses a control character anywhere inside, C0, DEL and C1 alike, and keeps every other character', () => {
    for (const c of ['\u0000', '\u001f', '\u007f', '\u0085', '\u009f'])
      expect(normalizeDisplayName(`Ann${c}Lee`), JSON.stringify(c)).toEqual({
        ok: false,
        code: 'error.profile.invalid_display_name',
        detail: 'The display name may not contain control characters.',
      });
    for (const c of [' ', '~', '\u00a0', '\u00e9', ASTRAL])
      expect(normalizeDisplayName(`Ann${c}Lee`), JSON.stringify(c)).toEqual({ ok: true, value: `Ann${c}Lee` });
  });

  it('holds at most 128 characters, counted as code points', () => {
    expect(normalizeDisplayName('a'.repeat(128))).toEqual({ ok: true, value: 'a'.repeat(128) });
    expect(normalizeDisplayName(ASTRAL.repeat(128))).toEqual({ ok: true, value: ASTRAL.repeat(128) });
    for (const long of ['a'.repeat(129), ASTRAL.repeat(129)])
      expect(normalizeDisplayName(long)).toEqual({
        ok: false,
        code: 'error.profile.invalid_display_name',
        detail: 'The display name may hold at most 128 characters.',
      });
  });
});

describe('checkPassword and couldBePassword', () => {
  it('a password holds 12 to 1024 characters, counted as code points', () => {
    for (const fine of ['a'.repeat(12), ASTRAL.repeat(12), 'a'.repeat(1024), ASTRAL.repeat(1024)])
      expect(checkPassword(fine)).toEqual({ ok: true, value: undefined });
    for (const short of ['a'.repeat(11), ASTRAL.repeat(6), ''])
      expect(checkPassword(short)).toEqual({
        ok: false,
        code: 'error.auth.weak_password',
        detail: 'The password needs at least 12 characters.',
      });
    for (const long of ['a'.repeat(1025), ASTRAL.repeat(1025)])
      expect(checkPassword(long)).toEqual({
        ok: false,
        code: 'error.auth.weak_password',
        detail: 'The password may hold at most 1024 characters.',
      });
  });

  it('a presented password could match a stored one exactly when it is no longer than the longest accepted', () => {
    for (const fine of ['', 'a'.repeat(1024), ASTRAL.repeat(1024), `${ASTRAL.repeat(1000)}${'a'.repeat(24)}`])
      expect(couldBePassword(fine)).toBe(true);
    for (const long of ['a'.repeat(1025), ASTRAL.repeat(1025)]) expect(couldBePassword(long)).toBe(false);
  });
});

describe('normalizeAddress', () => {
  it('trims the address, keeps it as typed in NFC, keys it folded, and keeps the lower-cased spelling as the legacy key', () => {
    expect(normalizeAddress('  Straße@Example.ORG\t')).toEqual({
      ok: true,
      value: { address: 'Straße@Example.ORG', key: 'strasse@example.org', legacyKey: 'straße@example.org' },
    });
    // NFD in, NFC kept (e and a combining acute become é); the legacy key is the spelling as sent.
    expect(normalizeAddress('Re\u0301my@example.org')).toMatchObject({
      ok: true,
      value: { address: 'R\u00e9my@example.org', key: 'r\u00e9my@example.org', legacyKey: 're\u0301my@example.org' },
    });
  });

  it('is user@domain.tld with no space or second @, and nothing around it', () => {
    for (const fine of ['a@b.co', 'ann.lee+tag@mail.example.org', 'x_y-z@sub-1.example.org'])
      expect(normalizeAddress(fine).ok, fine).toBe(true);
    for (const bad of [
      '',
      'ann',
      'ann@example',
      '@example.org',
      'ann@.org',
      'ann@example.',
      'an n@example.org',
      'ann@exa mple.org',
      'ann@example.org more',
      'more ann@example.org',
      'ann@@example.org',
      'ann@x@example.org',
    ])
      expect(normalizeAddress(bad), bad).toEqual({
        ok: false,
        code: 'error.request.invalid',
        detail: 'The address must be an e-mail address of at most 254 characters.',
      });
  });

  it('holds at most 254 characters, counted after trimming', () => {
    const longest = `${'a'.repeat(64)}@${'b'.repeat(185)}.org`;
    expect(longest).toHaveLength(254);
    expect(normalizeAddress(` ${longest} `)).toMatchObject({ ok: true, value: { address: longest } });
    expect(normalizeAddress(`a${longest}`)).toMatchObject({ ok: false, code: 'error.request.invalid' });
  });

  it('refuses an invisible or control character anywhere, the byte order mark even at either end', () => {
    for (const c of ['\u0007', '\u0085', '\u00ad', '\u200b', '\u2060', '\u034f', '\ufe0f', '\u115f']) {
      expect(holdsInvisible(`ann${c}@example.org`), JSON.stringify(c)).toBe(true);
      expect(normalizeAddress(`ann${c}@example.org`), JSON.stringify(c)).toEqual({
        ok: false,
        code: 'error.request.invalid',
        detail: 'The address holds an invisible or control character.',
      });
    }
    for (const bom of ['\ufeffann@example.org', 'ann@example.org\ufeff']) {
      expect(holdsInvisible(bom)).toBe(true);
      expect(normalizeAddress(bom)).toMatchObject({ ok: false, code: 'error.request.invalid' });
    }
    // Surrounding whitespace is trimmed, not refused: tabs and line feeds are controls.
    expect(holdsInvisible('\tann@example.org\r\n')).toBe(false);
    expect(holdsInvisible('ann@example.org')).toBe(false);
  });
});

describe('findAccountByAddress', () => {
  const account = (id: string): AccountRecord => ({
    id,
    address: null,
    addressKey: null,
    passwordHash: null,
    displayName: null,
    createdAt: 0,
    lockedAt: null,
    credentialsChangedAt: null,
  });
  /** A store holding `byKey`, and the keys it was asked for. */
  const store = (byKey: Record<string, AccountRecord>) => {
    const asked: string[] = [];
    return {
      asked,
      findAccountByAddress: async (key: string) => {
        asked.push(key);
        return byKey[key] ?? null;
      },
    };
  };
  const addr = (text: string): NormalizedAddress => {
    const n = normalizeAddress(text);
    if (!n.ok) throw new Error(`not an address: ${text}`);
    return n.value;
  };

  it('finds the account by its key first, and then asks nothing more', async () => {
    const s = store({ 'strasse@example.org': account('new'), 'straße@example.org': account('old') });
    expect(await findAccountByAddress(s, addr('Straße@example.org'))).toMatchObject({ id: 'new' });
    expect(s.asked).toEqual(['strasse@example.org']);
  });

  it('finds an account stored before folding by the spelling it had then', async () => {
    const s = store({ 'straße@example.org': account('old') });
    expect(await findAccountByAddress(s, addr('Straße@example.org'))).toMatchObject({ id: 'old' });
    expect(s.asked).toEqual(['strasse@example.org', 'straße@example.org']);
  });

  it('asks once when both keys are the same spelling', async () => {
    const s = store({});
    expect(await findAccountByAddress(s, addr('ann@example.org'))).toBeNull();
    expect(s.asked).toEqual(['ann@example.org']);
  });
});
