import { describe, expect, it } from 'vitest';
import { DEFAULT_QUOTA_POLICY } from '../quota/machine.js';
import { federatedBudget } from './budget.js';
import { decideSourcePeer } from './rules.js';

describe('peer blob cache', () => {
  it('a federated fill names a configured peer, compared as a base URL', () => {
    const peers = ['https://a.example', 'http://127.0.0.1:9'];
    expect(decideSourcePeer('https://a.example', peers)).toEqual({ ok: true, value: 'https://a.example' });
    expect(decideSourcePeer('https://a.example/', peers)).toEqual({ ok: true, value: 'https://a.example' });
    expect(decideSourcePeer('https://made-up.example', peers)).toMatchObject({
      ok: false,
      code: 'error.federation.unknown_peer',
    });
    expect(decideSourcePeer('https://a.example.evil', peers)).toMatchObject({
      ok: false,
      code: 'error.federation.unknown_peer',
    });
    expect(decideSourcePeer('https://a.example', [])).toMatchObject({
      ok: false,
      code: 'error.federation.unknown_peer',
    });
  });

  it('a source peer is a configured one when both name the same origin, as URL normalisation writes it', () => {
    const peers = ['https://a.example', 'http://127.0.0.1:19251', 'https://Mixed.Example:8443'];
    const same: [string, string][] = [
      ['HTTPS://A.EXAMPLE', 'https://a.example'],
      ['https://a.example:443', 'https://a.example'],
      ['https://a.example:443/', 'https://a.example'],
      ['HTTP://127.0.0.1:19251', 'http://127.0.0.1:19251'],
      ['https://mixed.example:8443', 'https://Mixed.Example:8443'],
    ];
    for (const [asked, configured] of same)
      expect(decideSourcePeer(asked, peers), asked).toEqual({ ok: true, value: configured });
    const others = [
      'http://a.example',
      'https://a.example:8443',
      'https://a.example/v1',
      'https://u@a.example',
      'https://a.example?x',
      'https://a.example#x',
      'http://127.0.0.1:19252',
      'not a url',
      'https://a.example:443:80',
    ];
    for (const asked of others)
      expect(decideSourcePeer(asked, peers), asked).toMatchObject({ ok: false, code: 'error.federation.unknown_peer' });
  });

  it('an unknown peer is refused with the name it was asked by', () => {
    expect(decideSourcePeer('https://made-up.example', ['https://a.example'])).toEqual({
      ok: false,
      code: 'error.federation.unknown_peer',
      detail: 'source_peer is not one of the peers this server federates with.',
      data: { source_peer: 'https://made-up.example' },
    });
  });

  it('a name that is no base URL matches no peer, not even a configured entry that is no base URL either', () => {
    const peers = ['https://a.example', 'not a url', 'https://b.example/v1'];
    for (const asked of ['not a url', 'also not a url', 'https://b.example/v1', 'https://c.example/v2'])
      expect(decideSourcePeer(asked, peers), asked).toMatchObject({ ok: false, code: 'error.federation.unknown_peer' });
  });

  it('only http and https origins are peers, whatever else is configured', () => {
    const peers = ['ftp://files.example', 'ws://sock.example', 'https://a.example'];
    for (const asked of ['ftp://files.example', 'ws://sock.example'])
      expect(decideSourcePeer(asked, peers), asked).toMatchObject({ ok: false, code: 'error.federation.unknown_peer' });
  });

  it('any number of trailing slashes is still the base URL', () => {
    const peers = ['https://a.example'];
    for (const asked of ['https://a.example//', 'https://a.example///'])
      expect(decideSourcePeer(asked, peers), asked).toEqual({ ok: true, value: 'https://a.example' });
    expect(decideSourcePeer('https://a.example', ['https://a.example///'])).toEqual({
      ok: true,
      value: 'https://a.example///',
    });
  });

  it('a receiver may cache a share of its hard limit from each peer; nothing bounds it when the hard limit is unlimited', () => {
    expect(federatedBudget({ soft: null, hard: null }, DEFAULT_QUOTA_POLICY)).toBeNull();
    expect(federatedBudget({ soft: null, hard: 1000 }, DEFAULT_QUOTA_POLICY)).toBe(250);
  });
});
