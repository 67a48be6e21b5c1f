import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { normalizeAddress, type NormalizedAddress } from '../profile/rules.js';
import { allowlistCandidates, allowlistEntry, decideRegistration, isRegistrationMode } from './rules.js';

const addr = (text: string): NormalizedAddress => {
  const n = normalizeAddress(text);
  if (!n.ok) throw new Error(text);
  return n.value;
};
const entries = (...typed: string[]): string[] =>
  typed.map((t) => {
    const e = allowlistEntry(t);
    if (!e.ok) throw new Error(t);
    return e.value;
  });
/** What the store answers: the listed entries among the candidates. */
const found = (list: string[], address: NormalizedAddress): string[] =>
  allowlistCandidates(address).filter((c) => list.includes(c));

describe('who may register', () => {
  it('open admits everyone, with or without an address; closed admits nobody', () => {
    expect(decideRegistration('open', addr('a@example.org'), [])).toEqual({ ok: true, value: undefined });
    expect(decideRegistration('open', null, [])).toEqual({ ok: true, value: undefined });
    expect(decideRegistration('closed', addr('a@example.org'), [])).toMatchObject({
      ok: false,
      code: 'error.auth.registration_closed',
    });
    expect(decideRegistration('closed', null, [])).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });
  });

  it('allowlist admits a listed address in any spelling that reaches the same account', () => {
    const list = entries('Anna@Example.org');
    for (const spelling of ['anna@example.org', 'ANNA@EXAMPLE.ORG', ' Anna@Example.org ']) {
      expect(decideRegistration('allowlist', addr(spelling), found(list, addr(spelling))).ok).toBe(true);
    }
    expect(
      decideRegistration('allowlist', addr('anne@example.org'), found(list, addr('anne@example.org'))),
    ).toMatchObject({ ok: false, code: 'error.auth.registration_closed' });
  });

  it('allowlist admits every address at a listed @domain, case-insensitively, and not its subdomains or look-alikes', () => {
    const list = entries('@Family.Example');
    expect(
      decideRegistration('allowlist', addr('kid@family.example'), found(list, addr('kid@family.example'))).ok,
    ).toBe(true);
    expect(
      decideRegistration('allowlist', addr('Kid@FAMILY.EXAMPLE'), found(list, addr('Kid@FAMILY.EXAMPLE'))).ok,
    ).toBe(true);
    for (const outside of ['kid@sub.family.example', 'kid@family.example.org', 'kid@evilfamily.example']) {
      expect(decideRegistration('allowlist', addr(outside), found(list, addr(outside))).ok).toBe(false);
    }
  });

  it('allowlist refuses a first OpenID sign-in that brings no verified address', () => {
    expect(decideRegistration('allowlist', null, []).ok).toBe(false);
  });

  it('an entry is an address (keyed as sign-in keys it) or @ and a domain; anything else is refused', () => {
    expect(entries('Straße@Example.org')).toEqual([addr('strasse@example.org').key]);
    expect(entries('@EXAMPLE.org')).toEqual(['@example.org']);
    for (const bad of [
      '',
      '@',
      '@example',
      '@exa mple.org',
      '@a@b.org',
      'not-an-address',
      '@-x.org',
      '@x..org',
      '@x.org\u200b',
    ]) {
      expect(allowlistEntry(bad)).toMatchObject({ ok: false, code: 'error.request.invalid' });
    }
  });

  it('a listed address admits exactly the addresses with its key (property)', () => {
    const local = fc.stringMatching(/^[a-zA-Z0-9._-]{1,12}$/);
    const domain = fc.stringMatching(/^[a-zA-Z0-9]{1,8}\.[a-zA-Z]{2,4}$/);
    fc.assert(
      fc.property(local, domain, local, domain, (l1, d1, l2, d2) => {
        const list = entries(`${l1}@${d1}`);
        const other = addr(`${l2}@${d2}`);
        expect(decideRegistration('allowlist', other, found(list, other)).ok).toBe(
          other.key === addr(`${l1}@${d1}`).key,
        );
      }),
    );
  });

  it('is not fooled by look-alikes of a listed address or domain', () => {
    const list = entries('ann@family.example', '@family.example');
    const refused = (typed: string) => {
      const n = normalizeAddress(typed);
      // An address no account could hold is refused before the allowlist is read.
      return !n.ok || !decideRegistration('allowlist', n.value, found(list, n.value)).ok;
    };
    for (const attempt of [
      'ann@fаmily.example', // Cyrillic а
      'ann@family.example.', // a trailing dot is another name
      'ann@family.example.evil.org',
      'ann@evilfamily.example',
      'ann@sub.family.example',
      'ann@family.exa\u200bmple', // zero-width space
      'ann@family\u00adexample', // soft hyphen
      'ann@family@family.example',
    ]) {
      expect(refused(attempt), attempt).toBe(true);
    }
    const listedOnly = entries('ann@family.example');
    // Plus-addressing is another address: listed alone, ann's address admits only itself.
    expect(
      decideRegistration('allowlist', addr('ann+x@family.example'), found(listedOnly, addr('ann+x@family.example'))).ok,
    ).toBe(false);
  });

  it('closed admits nobody, even an address the allowlist would hold', () => {
    const anna = addr('anna@example.org');
    const listed = found(entries('anna@example.org', '@example.org'), anna);
    expect(decideRegistration('closed', anna, listed)).toEqual({
      ok: false,
      code: 'error.auth.registration_closed',
      detail: 'This server does not take new accounts for this address.',
    });
  });

  it('an entry is trimmed before it is read, so a padded @domain is still a domain', () => {
    expect(entries(' @Example.org ', '\tanna@example.org\n')).toEqual(['@example.org', 'anna@example.org']);
  });

  it('an @domain entry holds at most 253 characters, the longest domain name', () => {
    const longest = `${'a'.repeat(249)}.org`;
    expect(entries(`@${longest}`)).toEqual([`@${longest}`]);
    expect(allowlistEntry(`@a${longest}`)).toMatchObject({ ok: false, code: 'error.request.invalid' });
  });

  it('a refused entry is quoted back as typed, saying what an entry may be', () => {
    expect(allowlistEntry(' @x..org ')).toEqual({
      ok: false,
      code: 'error.request.invalid',
      detail: '"@x..org" is not @ followed by a domain such as @example.org',
    });
    expect(allowlistEntry('not-an-address')).toEqual({
      ok: false,
      code: 'error.request.invalid',
      detail: '"not-an-address" is neither an e-mail address nor @ followed by a domain',
    });
  });

  it('knows its modes', () => {
    expect(['open', 'closed', 'allowlist'].every(isRegistrationMode)).toBe(true);
    expect(isRegistrationMode('Open')).toBe(false);
  });
});
