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

  it('a receiver may cache a share of its hard limit from each peer; nothing bounds it when the hard limit is unlimited', () => {
    expect(federatedBudget({ soft: null, hard: null }, DEFAULT_QUOTA_POLICY)).toBeNull();
    expect(federatedBudget({ soft: null, hard: 1000 }, DEFAULT_QUOTA_POLICY)).toBe(250);
  });
});
