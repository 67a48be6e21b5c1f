import { describe, expect, it } from 'vitest';
import { parseHandle } from '../discovery/rules.js';
import { decidePeerAnswer } from './answer.js';

const PEER = 'https://b.example:8443';
const asked = parseHandle('bob@b.example:8443')!;
const answer = (handle: unknown, status = 200) => ({ status, body: { handle, account_id: 'x', display_name: null, identity_key: null, directory: null }, retryAfter: null });

describe('a peer\'s answer to a forwarded lookup', () => {
  it('is passed on when it is for the handle asked, a handle of that peer', () => {
    for (const handle of ['bob@b.example:8443', 'bob@B.Example:8443']) {
      expect(decidePeerAnswer(PEER, asked, answer(handle)), handle).toEqual({ ok: true, value: answer(handle) });
    }
  });

  it('is refused as a bad answer when it is for any other handle: another user, another server (ours too), or none', () => {
    const others = ['eve@b.example:8443', 'bob@a.example', 'bob@b.example', 'bob@b.example:8444', 'Bob@b.example:8443', 'bob', '', null, 7, ['bob@b.example:8443']];
    for (const handle of others) {
      expect(decidePeerAnswer(PEER, asked, answer(handle)), JSON.stringify(handle)).toMatchObject({ ok: false, code: 'error.federation.peer_unavailable' });
    }
    expect(decidePeerAnswer(PEER, asked, { status: 200, body: 'bob@b.example:8443', retryAfter: null })).toMatchObject({ ok: false, code: 'error.federation.peer_unavailable' });
  });

  it('is refused when the handle asked is not that peer\'s, even if the answer repeats it', () => {
    const elsewhere = parseHandle('bob@a.example')!;
    expect(decidePeerAnswer(PEER, elsewhere, answer('bob@a.example'))).toMatchObject({ ok: false, code: 'error.federation.peer_unavailable' });
  });

  it('passes a refusal on as it came: it names no handle', () => {
    const refusal = { status: 404, body: { code: 'error.not_found' }, retryAfter: null };
    expect(decidePeerAnswer(PEER, asked, refusal)).toEqual({ ok: true, value: refusal });
  });
});
