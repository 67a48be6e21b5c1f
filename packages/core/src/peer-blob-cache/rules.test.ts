import { describe, expect, it } from 'vitest';
import { DEFAULT_QUOTA_POLICY } from '../quota/machine.js';
import { federatedBudget } from './budget.js';
import { decideSourcePeer } from './rules.js';

describe('peer blob cache', () => {
  it('a federated fill names a configured peer, compared as a base URL', () => {
    const peers = ['https://a.example', 'http://127.0.0.1:9'];
    expect(decideSourcePeer('https://a.example', peers)).toEqual({ ok: true, value: 'https://a.example' });
    expect(decideSourcePeer('https://a.example/', peers)).toEqual({ ok: true, value: 'https://a.example' });
    expect(decideSourcePeer('https://made-up.example', peers)).toMatchObject({ ok: false, code: 'error.federation.unknown_peer' });
    expect(decideSourcePeer('https://a.example.evil', peers)).toMatchObject({ ok: false, code: 'error.federation.unknown_peer' });
    expect(decideSourcePeer('https://a.example', [])).toMatchObject({ ok: false, code: 'error.federation.unknown_peer' });
  });

  it('a receiver may cache a share of its hard limit from each peer; nothing bounds it when the hard limit is unlimited', () => {
    expect(federatedBudget({ soft: null, hard: null }, DEFAULT_QUOTA_POLICY)).toBeNull();
    expect(federatedBudget({ soft: null, hard: 1000 }, DEFAULT_QUOTA_POLICY)).toBe(250);
  });
});
