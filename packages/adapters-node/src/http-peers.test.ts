import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { PeerUnavailableError } from '@strongroom/core';
import { FakeClock } from '@strongroom/core/testing';
import { HttpPeers } from './http-peers.js';

const PEER = 'https://peer.example';
const key = (kid: string) => ({ kty: 'OKP', crv: 'Ed25519', x: 'A'.repeat(43), kid, alg: 'EdDSA', use: 'sig' });

/** A fake peer: serves server info with `kids` and a revoked-jti record, counting requests by path. */
function fakePeer() {
  const state = { kids: ['k1'], revoked: [] as string[], hits: new Map<string, number>(), hang: false, down: false };
  const fetchFn = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    state.hits.set(url.pathname, (state.hits.get(url.pathname) ?? 0) + 1);
    if (state.down) throw new TypeError('fetch failed');
    if (state.hang) {
      return new Promise<Response>((_, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)),
      );
    }
    if (url.pathname === '/.well-known/svc/server-info') {
      return Response.json({ api_base_url: PEER, signing_keys: { keys: state.kids.map(key) } });
    }
    if (url.pathname === '/.well-known/svc/revoked-jti') {
      return Response.json({
        issuer: PEER,
        window_s: 86400,
        revoked: state.revoked.map((jti) => ({ jti, revoked_at: 'x', exp: 'y' })),
      });
    }
    if (url.pathname === '/v1/discovery/lookup') {
      const auth = new Headers(init?.headers).get('authorization');
      return Response.json(
        { type: 'about:blank', status: 429, code: 'error.federation.rate_limited', auth },
        { status: 429, headers: { 'retry-after': '7' } },
      );
    }
    return new Response('no', { status: 404 });
  }) as typeof fetch;
  return { state, fetchFn, hits: (p: string) => state.hits.get(p) ?? 0 };
}

describe("HttpPeers: a peer's records over HTTP", () => {
  it('fetches the keys once, then serves known kids from the cache', async () => {
    const peer = fakePeer();
    const peers = new HttpPeers({ clock: new FakeClock(), fetch: peer.fetchFn });
    expect(await peers.verificationKey(PEER, 'k1')).toMatchObject({ kid: 'k1', crv: 'Ed25519' });
    await Promise.all(Array.from({ length: 20 }, () => peers.verificationKey(PEER, 'k1')));
    expect(peer.hits('/.well-known/svc/server-info')).toBe(1);
  });

  it('refetches once for an unknown kid, and not again inside the interval (forged-token flood)', async () => {
    const peer = fakePeer();
    const clock = new FakeClock();
    const peers = new HttpPeers({ clock, fetch: peer.fetchFn, unknownKidIntervalMs: 30_000 });
    await peers.verificationKey(PEER, 'k1');
    peer.state.kids = ['k1', 'k2'];
    expect(await peers.verificationKey(PEER, 'k2')).toMatchObject({ kid: 'k2' }); // a rotation is learnt
    expect(peer.hits('/.well-known/svc/server-info')).toBe(2);
    for (let i = 0; i < 50; i++) expect(await peers.verificationKey(PEER, `forged-${i}`)).toBeNull();
    expect(peer.hits('/.well-known/svc/server-info')).toBe(2);
    clock.advance(30_000);
    expect(await peers.verificationKey(PEER, 'forged-x')).toBeNull();
    expect(peer.hits('/.well-known/svc/server-info')).toBe(3);
  });

  it('caches the revoked-jti record for at most 60 seconds, whatever it is told', async () => {
    const peer = fakePeer();
    const clock = new FakeClock();
    const peers = new HttpPeers({ clock, fetch: peer.fetchFn, revokedTtlMs: 3_600_000 });
    expect((await peers.revokedJtis(PEER)).has('j1')).toBe(false);
    peer.state.revoked = ['j1'];
    clock.advance(59_999);
    expect((await peers.revokedJtis(PEER)).has('j1')).toBe(false);
    clock.advance(1);
    expect((await peers.revokedJtis(PEER)).has('j1')).toBe(true);
    expect(peer.hits('/.well-known/svc/revoked-jti')).toBe(2);
  });

  it('gives up after the timeout, and reports an unreachable peer as unavailable', async () => {
    const peer = fakePeer();
    const peers = new HttpPeers({ clock: new FakeClock(), fetch: peer.fetchFn, timeoutMs: 50 });
    peer.state.hang = true;
    await expect(peers.verificationKey(PEER, 'k1')).rejects.toBeInstanceOf(PeerUnavailableError);
    await expect(
      peers.lookup({ peer: PEER, handle: 'a@b', capability: 't', protocolVersion: '2026-11-01' }),
    ).rejects.toBeInstanceOf(PeerUnavailableError);
    peer.state.hang = false;
    peer.state.down = true;
    await expect(peers.revokedJtis(PEER)).rejects.toBeInstanceOf(PeerUnavailableError);
  });

  it('after a failed fetch, refuses at once for the backoff instead of asking again', async () => {
    const peer = fakePeer();
    const clock = new FakeClock();
    const peers = new HttpPeers({ clock, fetch: peer.fetchFn, failureBackoffMs: 5_000 });
    peer.state.down = true;
    for (let i = 0; i < 10; i++)
      await expect(peers.verificationKey(PEER, 'k1')).rejects.toBeInstanceOf(PeerUnavailableError);
    expect(peer.hits('/.well-known/svc/server-info')).toBe(1);
    peer.state.down = false;
    clock.advance(5_000);
    expect(await peers.verificationKey(PEER, 'k1')).toMatchObject({ kid: 'k1' });
    expect(peer.hits('/.well-known/svc/server-info')).toBe(2);
  });

  it('refuses server info that names another base URL', async () => {
    const peers = new HttpPeers({
      clock: new FakeClock(),
      fetch: (async () =>
        Response.json({ api_base_url: 'https://evil.example', signing_keys: { keys: [key('k1')] } })) as typeof fetch,
    });
    await expect(peers.verificationKey(PEER, 'k1')).rejects.toBeInstanceOf(PeerUnavailableError);
  });

  it("forwards a lookup with the capability and passes the peer's answer back, Retry-After included", async () => {
    const peer = fakePeer();
    const peers = new HttpPeers({ clock: new FakeClock(), fetch: peer.fetchFn });
    const reply = await peers.lookup({
      peer: PEER,
      handle: 'ann@peer.example',
      capability: 'tok',
      protocolVersion: '2026-11-01',
    });
    expect(reply).toEqual({
      status: 429,
      body: expect.objectContaining({ code: 'error.federation.rate_limited', auth: 'SvcCapability tok' }),
      retryAfter: '7',
    });
  });
});

/**
 * A real peer on loopback answering `respond`, counting the bytes it managed to send and noting
 * when its side of each exchange was torn down.
 */
async function loopbackPeer(respond: (res: ServerResponse, state: { sent: number }) => void) {
  const state = { sent: 0, closed: 0 };
  const server = createServer((_req, res) => {
    res.on('close', () => state.closed++);
    respond(res, state);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    state,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

/** Writes `chunk` for as long as the connection lasts, as fast as the socket drains. */
function flood(res: ServerResponse, state: { sent: number }, chunk: Buffer): void {
  const more = () => {
    while (!res.destroyed) {
      state.sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', more);
    }
  };
  more();
}

const elapsed = async (p: Promise<unknown>): Promise<{ ms: number; error: unknown }> => {
  const started = performance.now();
  const error = await p.then(
    () => null,
    (e: unknown) => e,
  );
  return { ms: performance.now() - started, error };
};

describe('HttpPeers: a hostile peer cannot exhaust memory or time', () => {
  const ask = (peers: HttpPeers, url: string) =>
    [
      ['lookup', () => peers.lookup({ peer: url, handle: 'eve@x', capability: 't', protocolVersion: '2026-11-01' })],
      ['server info', () => peers.verificationKey(url, 'k1')],
    ] as const;

  it('refuses an answer declaring more than the cap at once, without reading it', async () => {
    const peer = await loopbackPeer((res, state) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(300 * 1024 * 1024) });
      // A little of it, then nothing: only the declared length can tell.
      state.sent += 1024;
      res.write(Buffer.alloc(1024, 0x20));
    });
    try {
      const peers = new HttpPeers({ clock: new FakeClock(), timeoutMs: 5_000 });
      for (const [name, call] of ask(peers, peer.url)) {
        const r = await elapsed(call());
        expect(r.error, name).toBeInstanceOf(PeerUnavailableError);
        expect(r.ms, name).toBeLessThan(2_000);
      }
    } finally {
      await peer.close();
    }
  });

  it('stops reading an endless body once past the cap, and drops the connection', async () => {
    const peer = await loopbackPeer((res, state) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      flood(res, state, Buffer.alloc(64 * 1024, 0x20));
    });
    try {
      const peers = new HttpPeers({ clock: new FakeClock(), timeoutMs: 20_000 });
      for (const [name, call] of ask(peers, peer.url)) {
        const closedBefore = peer.state.closed;
        const r = await elapsed(call());
        expect(r.error, name).toBeInstanceOf(PeerUnavailableError);
        expect(r.ms, name).toBeLessThan(5_000);
        await expect.poll(() => peer.state.closed, { timeout: 2_000 }).toBeGreaterThan(closedBefore);
      }
      // What got through before the refusal is the cap plus what the sockets buffer, not the flood.
      expect(peer.state.sent).toBeLessThan(2 * 32 * 1024 * 1024);
    } finally {
      await peer.close();
    }
  });

  it('keeps the body under the timeout too: a trickle is cut off when the time is up', async () => {
    const peer = await loopbackPeer((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{');
      const timer = setInterval(() => res.write(' '), 50);
      res.on('close', () => clearInterval(timer));
    });
    try {
      const peers = new HttpPeers({ clock: new FakeClock(), timeoutMs: 300 });
      for (const [name, call] of ask(peers, peer.url)) {
        const r = await elapsed(call());
        expect(r.error, name).toBeInstanceOf(PeerUnavailableError);
        expect(r.ms, name).toBeLessThan(1_500);
      }
    } finally {
      await peer.close();
    }
  });
});
