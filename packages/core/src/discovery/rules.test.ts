import { describe, expect, it } from 'vitest';
import { anonymousRecord, handleHost, isHandleUser, lookupAnswer, parseAcctResource, parseHandle } from './rules.js';

describe('handle syntax', () => {
  it('accepts the documented user pattern and nothing else', () => {
    for (const ok of ['a', 'ann', '0', 'a.b_c-d', 'x'.repeat(64), 'ann.2026']) expect(isHandleUser(ok), ok).toBe(true);
    for (const bad of ['', 'Ann', '.ann', '-ann', '_ann', 'x'.repeat(65), 'ann@x', 'an n', 'ännа', 'ann\n'])
      expect(isHandleUser(bad), bad).toBe(false);
  });

  it('takes the handle host from the base URL, keeping only a non-default port', () => {
    expect(handleHost('https://photos.example')).toBe('photos.example');
    expect(handleHost('https://Photos.Example:443/')).toBe('photos.example');
    expect(handleHost('http://127.0.0.1:18201')).toBe('127.0.0.1:18201');
    expect(handleHost('http://127.0.0.1:80')).toBe('127.0.0.1');
    expect(handleHost('https://photos.example:8443/api')).toBe('photos.example:8443');
  });

  it('parses user@host, normalising the host the same way', () => {
    expect(parseHandle('ann@photos.example')).toEqual({ user: 'ann', host: 'photos.example' });
    expect(parseHandle('ann@Photos.EXAMPLE')).toEqual({ user: 'ann', host: 'photos.example' });
    expect(parseHandle('ann@127.0.0.1:18201')).toEqual({ user: 'ann', host: '127.0.0.1:18201' });
    for (const bad of [
      'ann',
      '@host',
      'ann@',
      'Ann@host',
      'ann@ho st',
      'ann@host/path',
      'ann@user:pw@host',
      'ann@host?x',
      'ann@host#x',
    ]) {
      expect(parseHandle(bad), bad).toBeNull();
    }
  });

  it('refuses, as null, a host of allowed characters that is still no host', () => {
    for (const bad of ['ann@host:99999', 'ann@[::1', 'ann@:80', 'ann@[']) expect(parseHandle(bad), bad).toBeNull();
  });

  it('takes a host of up to 261 characters and no longer', () => {
    const label = 'a'.repeat(63);
    const longest = `${[label, label, label, label].join('.')}:65535`;
    expect(longest).toHaveLength(261);
    expect(parseHandle(`ann@${longest}`)).toEqual({ user: 'ann', host: longest });
    // The URL parser itself would take any length, so the bound is this rule's alone.
    expect(parseHandle(`ann@a${longest}`)).toBeNull();
  });

  it('reads only acct: WebFinger resources', () => {
    expect(parseAcctResource('acct:ann@photos.example')).toEqual({ user: 'ann', host: 'photos.example' });
    expect(parseAcctResource('ann@photos.example')).toBeNull();
    expect(parseAcctResource('https://photos.example/ann')).toBeNull();
    expect(parseAcctResource('acct:')).toBeNull();
    // Another scheme of the same length, whose rest would be a well-formed handle.
    expect(parseAcctResource('xmpp:ann@photos.example')).toBeNull();
  });
});

describe('what a lookup may reveal', () => {
  const handle = { accountId: 'acct-1', user: 'ann', published: true };

  it('shows nothing anonymously until the owner publishes, then only handle and display name', () => {
    expect(anonymousRecord(null, 'h', 'Ann')).toBeNull();
    expect(anonymousRecord({ ...handle, published: false }, 'h', 'Ann')).toBeNull();
    expect(anonymousRecord(handle, 'h', 'Ann')).toEqual({ handle: 'ann@h', displayName: 'Ann' });
    expect(Object.keys(anonymousRecord(handle, 'h', null)!).sort()).toEqual(['displayName', 'handle']);
  });

  it('answers an authenticated lookup with the keys as signed, and nothing else', () => {
    const directory = {
      identityKey: new Uint8Array([1, 2]),
      body: new Uint8Array([3, 4]),
      seq: 9,
      cohort: 'never',
    } as never;
    const answer = lookupAnswer(handle, 'h', null, directory);
    expect(answer).toEqual({
      handle: 'ann@h',
      accountId: 'acct-1',
      displayName: null,
      identityKey: new Uint8Array([1, 2]),
      directory: new Uint8Array([3, 4]),
    });
    expect(lookupAnswer(handle, 'h', 'Ann', null)).toMatchObject({ identityKey: null, directory: null });
  });
});
