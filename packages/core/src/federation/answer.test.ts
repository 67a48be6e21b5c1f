import { describe, expect, it } from 'vitest';
import { parseHandle } from '../discovery/rules.js';
import { decidePeerAnswer } from './answer.js';

const PEER = 'https://b.example:8443';
const asked = parseHandle('bob@b.example:8443')!;
const answer = (handle: unknown, status = 200) => ({
  status,
  body: { handle, account_id: 'x', display_name: null, identity_key: null, directory: null },
  retryAfter: null,
});

describe("a peer's answer to a forwarded lookup", () => {
  it('is passed on when it is for the handle asked, a handle of that peer', () => {
    for (const handle of ['bob@b.example:8443', 'bob@B.Example:8443']) {
      expect(decidePeerAnswer(PEER, asked, answer(handle)), handle).toEqual({ ok: true, value: answer(handle) });
    }
  });

  it('is refused as a bad answer when it is for any other handle: another user, another server (ours too), or none', () => {
    const others = [
      'eve@b.example:8443',
      'bob@a.example',
      'bob@b.example',
      'bob@b.example:8444',
      'Bob@b.example:8443',
      'bob',
      '',
      null,
      7,
      ['bob@b.example:8443'],
    ];
    for (const handle of others) {
      expect(decidePeerAnswer(PEER, asked, answer(handle)), JSON.stringify(handle)).toMatchObject({
        ok: false,
        code: 'error.federation.peer_unavailable',
      });
    }
    expect(decidePeerAnswer(PEER, asked, { status: 200, body: 'bob@b.example:8443', retryAfter: null })).toMatchObject({
      ok: false,
      code: 'error.federation.peer_unavailable',
    });
  });

  it("is refused when the handle asked is not that peer's, even if the answer repeats it", () => {
    const elsewhere = parseHandle('bob@a.example')!;
    expect(decidePeerAnswer(PEER, elsewhere, answer('bob@a.example'))).toMatchObject({
      ok: false,
      code: 'error.federation.peer_unavailable',
    });
  });

  it('is refused as a bad answer when its 200 is not the lookup answer of the wire, though for the handle asked', () => {
    const KEY = 'Ml0ZUUF6347oFEC6Ihp0zQg0YZFV2mxhnYWBW9xpTyc';
    const reply = (over: Record<string, unknown>) => ({
      status: 200,
      body: {
        handle: 'bob@b.example:8443',
        account_id: 'x',
        display_name: null,
        identity_key: KEY,
        directory: 'oWFhAQ',
        ...over,
      },
      retryAfter: null,
    });
    for (const over of [{}, { display_name: 'Bob' }, { identity_key: null, directory: null }]) {
      expect(decidePeerAnswer(PEER, asked, reply(over)), JSON.stringify(over)).toEqual({
        ok: true,
        value: reply(over),
      });
    }
    const bad: Record<string, unknown>[] = [
      { identity_key: 'not base64!!' },
      { identity_key: `${KEY}=` },
      { identity_key: KEY.slice(0, 42) },
      { identity_key: `${KEY}AAAA` },
      { identity_key: 7 },
      { directory: 'not base64!!' },
      { directory: '' },
      { directory: null },
      { identity_key: null },
      { account_id: 5 },
      { account_id: '' },
      { account_id: undefined },
      { display_name: 7 },
      { display_name: undefined },
    ];
    for (const over of bad) {
      expect(decidePeerAnswer(PEER, asked, reply(over)), JSON.stringify(over)).toMatchObject({
        ok: false,
        code: 'error.federation.peer_unavailable',
      });
    }
  });

  it('passes a refusal on as it came: it names no handle', () => {
    for (const [status, code] of [
      [404, 'error.not_found'],
      [429, 'error.federation.rate_limited'],
      [503, 'error.auth.unavailable'],
      [400, 'error.something_new_to_us'],
    ] as const) {
      const refusal = { status, body: { code }, retryAfter: null };
      expect(decidePeerAnswer(PEER, asked, refusal)).toEqual({ ok: true, value: refusal });
    }
  });

  it('takes a refusal without an error code of the usual shape, or a status that is no refusal, as a bad answer', () => {
    const codes: unknown[] = [
      'x'.repeat(1_000_000),
      `error.${'a'.repeat(100)}`,
      'your session is dead, sign in again',
      'error.',
      'Error.not_found',
      'error.not found',
      7,
      null,
      undefined,
    ];
    for (const code of codes) {
      expect(
        decidePeerAnswer(PEER, asked, { status: 401, body: { code }, retryAfter: null }),
        String(code).slice(0, 40),
      ).toMatchObject({ ok: false, code: 'error.federation.peer_unavailable' });
    }
    for (const status of [201, 302, 304, 600]) {
      expect(
        decidePeerAnswer(PEER, asked, { status, body: { code: 'error.not_found' }, retryAfter: null }),
        String(status),
      ).toMatchObject({ ok: false });
    }
  });
});
