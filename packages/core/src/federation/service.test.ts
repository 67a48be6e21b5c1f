import { describe, expect, it } from 'vitest';
import type { JWK } from 'jose';
import type { PeerDirectory } from '../ports/peer-directory.js';
import type { PeerLookup } from '../ports/peer-lookup.js';
import { FakeClock, MemoryDiscoveryStore, MemoryStore, SeededRandom, testSecretBox } from '../testing/index.js';
import { KeyRing } from '../tokens/key-ring.js';
import { capabilityClaims, signCapability } from './capability.js';
import { PeerUnavailableError } from './peer-error.js';
import { FederationService } from './service.js';

const A = 'https://a.example';
const B = 'https://b.example:8443';

/** Server A (the issuer) and server B (the receiver), B reading A's keys through a fake directory. */
async function pair(rate = 2) {
  const clock = new FakeClock();
  const random = new SeededRandom(11);
  const ringA = new KeyRing({ store: new MemoryStore(), clock, random, graceMs: 3_600_000, box: testSecretBox() });
  await ringA.init();
  const storeA = new MemoryDiscoveryStore();
  const storeB = new MemoryDiscoveryStore();
  const calls = { keys: 0, revoked: 0 };
  const revoked = new Set<string>();
  let reachable = true;
  const directory: PeerDirectory = {
    verificationKey: async (peer, kid) => {
      calls.keys++;
      if (!reachable) throw new PeerUnavailableError('down');
      if (peer !== A) return null;
      return ((await ringA.jwks()).keys.find((k) => k.kid === kid) as JWK | undefined) ?? null;
    },
    revokedJtis: async () => {
      calls.revoked++;
      if (!reachable) throw new PeerUnavailableError('down');
      return revoked;
    },
  };
  const forwarded: unknown[] = [];
  /** What B answers a forwarded lookup: by default, the handle that was asked. */
  let answers = (handle: string): unknown => ({
    handle,
    account_id: 'acc',
    display_name: null,
    identity_key: null,
    directory: null,
  });
  const forwarder: PeerLookup = {
    lookup: async (request) => {
      forwarded.push(request);
      return { status: 200, body: answers(request.handle), retryAfter: null };
    },
  };
  const unused: PeerDirectory & PeerLookup = {
    verificationKey: async () => null,
    revokedJtis: async () => new Set(),
    lookup: async () => ({ status: 500, body: null, retryAfter: null }),
  };
  const depsA = {
    keyRing: ringA,
    clock,
    random,
    baseUrl: A,
    peers: [B],
    rate,
    directory: unused,
    forwarder,
    revocations: storeA,
    buckets: storeA,
  };
  const fedA = new FederationService(depsA);
  const ringB = new KeyRing({ store: new MemoryStore(), clock, random, graceMs: 3_600_000, box: testSecretBox() });
  await ringB.init();
  const fedB = new FederationService({
    keyRing: ringB,
    clock,
    random,
    baseUrl: B,
    peers: [A],
    rate,
    directory,
    forwarder: unused,
    revocations: storeB,
    buckets: storeB,
  });
  return {
    clock,
    depsA,
    fedA,
    fedB,
    storeA,
    storeB,
    revoked,
    calls,
    forwarded,
    setReachable: (r: boolean) => (reachable = r),
    setAnswers: (f: typeof answers) => (answers = f),
  };
}

describe('FederationService', () => {
  it('a forwarded lookup remembers the local account its token was minted for, so deleting the account can revoke it', async () => {
    const { fedA, storeA } = await pair();
    await fedA.forward(B, { user: 'bob', host: 'b.example:8443' }, 'ann@a.example', '2026-11-01', 'ann-id');
    expect([...storeA.state.minted.values()]).toEqual([
      expect.objectContaining({ peer: B, accountId: 'ann-id', revokedAt: null }),
    ]);
  });
  it("B accepts what A minted for it, once per token drawn from A's bucket", async () => {
    const { fedA, fedB, storeA } = await pair();
    const { token, claims } = await fedA.mint(B, 'ann@a.example');
    expect(await fedB.check(token)).toEqual({
      ok: true,
      value: { issuer: A, subject: 'ann@a.example', jti: claims.jti, expiresAt: claims.exp * 1000 },
    });
    // A remembers what it minted, so the operator can revoke it.
    expect(await fedA.revoke(claims.jti)).toBe(true);
    expect((await storeA.listRevokedCapabilities(0)).map((r) => r.jti)).toEqual([claims.jti]);
  });

  it('refuses a token its issuer revoked', async () => {
    const { fedA, fedB, revoked } = await pair();
    const { token, claims } = await fedA.mint(B, 's');
    revoked.add(claims.jti);
    expect(await fedB.check(token)).toMatchObject({ ok: false, code: 'error.federation.capability_invalid' });
  });

  it('refuses a token issued in the future or expiring too far ahead, also once its revocation has left the 24-hour list', async () => {
    const { fedB, revoked, clock, depsA } = await pair(100);
    const now = Math.floor(clock.now() / 1000);
    let k = 0;
    const forged = async (iat: number, exp: number) => {
      const claims = {
        ...capabilityClaims({
          issuer: A,
          peer: B,
          subject: 'ann@a.example',
          now: clock.now(),
          random: new Uint8Array(10).fill(++k),
        }),
        iat,
        exp,
      };
      return { claims, token: await signCapability(claims, await depsA.keyRing.signingKey()) };
    };
    const tenYears = 10 * 365 * 86_400;
    const future = await forged(now + tenYears, now + tenYears + 3600);
    expect(await fedB.check(future.token)).toMatchObject({ ok: false, code: 'error.federation.capability_invalid' });
    revoked.add(future.claims.jti);
    expect(await fedB.check(future.token)).toMatchObject({ ok: false, code: 'error.federation.capability_invalid' });
    // A day later the issuer no longer lists the revocation; the token must still be worthless.
    clock.advance(86_400_001);
    revoked.clear();
    expect(await fedB.check(future.token)).toMatchObject({ ok: false, code: 'error.federation.capability_invalid' });
    const at = Math.floor(clock.now() / 1000);
    // The edges: iat up to 60 s ahead, exp up to 3,660 s ahead (and never more than 3,600 s after iat).
    expect((await fedB.check((await forged(at + 60, at + 3660)).token)).ok).toBe(true);
    expect(await fedB.check((await forged(at + 61, at + 3661)).token)).toMatchObject({
      ok: false,
      code: 'error.federation.capability_invalid',
    });
    expect(await fedB.check((await forged(at + 61, at + 600)).token)).toMatchObject({
      ok: false,
      code: 'error.federation.capability_invalid',
    });
    expect((await fedB.check((await forged(at - 10, at + 3590)).token)).ok).toBe(true);
  });

  it('limits each peer, and only tokens that verify draw from the bucket', async () => {
    const { fedA, fedB, clock } = await pair(2);
    const forged = `${(await fedA.mint(B, 's')).token.slice(0, -4)}AAAA`;
    for (let i = 0; i < 5; i++) expect((await fedB.check(forged)).ok).toBe(false);
    expect((await fedB.check((await fedA.mint(B, 's')).token)).ok).toBe(true);
    expect((await fedB.check((await fedA.mint(B, 's')).token)).ok).toBe(true);
    const third = await fedB.check((await fedA.mint(B, 's')).token);
    expect(third).toMatchObject({ ok: false, code: 'error.federation.rate_limited', data: { retry_after: 30 } });
    clock.advance(30_000);
    expect((await fedB.check((await fedA.mint(B, 's')).token)).ok).toBe(true);
  });

  it('refuses an unlisted issuer without asking anyone, and fails closed when the issuer is unreachable', async () => {
    const { depsA, fedA, fedB, calls, setReachable } = await pair();
    // Same keys, but calling itself by a name B does not list.
    const stranger = new FederationService({ ...depsA, baseUrl: 'https://c.example' });
    expect(await fedB.check((await stranger.mint(B, 's')).token)).toMatchObject({
      ok: false,
      code: 'error.federation.capability_invalid',
    });
    expect(calls.keys).toBe(0);
    setReachable(false);
    expect(await fedB.check((await fedA.mint(B, 's')).token)).toMatchObject({
      ok: false,
      code: 'error.federation.capability_invalid',
    });
  });

  it('forwards to a peer with a fresh token for it, and maps hosts to listed peers', async () => {
    const { fedA, forwarded } = await pair();
    expect(fedA.peerFor('b.example:8443')).toBe(B);
    expect(fedA.peerFor('b.example')).toBeNull();
    expect(await fedA.forward(B, { user: 'bob', host: 'b.example:8443' }, 'ann@a.example', '2026-11-01')).toMatchObject(
      { ok: true, value: { status: 200, body: { handle: 'bob@b.example:8443' } } },
    );
    expect(forwarded).toEqual([
      { peer: B, handle: 'bob@b.example:8443', capability: expect.any(String), protocolVersion: '2026-11-01' },
    ]);
  });

  it("refuses a peer's 200 for another handle than the one asked, its own or another server's", async () => {
    const { fedA, setAnswers } = await pair();
    for (const other of ['eve@b.example:8443', 'ann@a.example']) {
      setAnswers(() => ({
        handle: other,
        account_id: 'acc',
        display_name: null,
        identity_key: 'A'.repeat(43),
        directory: null,
      }));
      expect(
        await fedA.forward(B, { user: 'bob', host: 'b.example:8443' }, 'ann@a.example', '2026-11-01'),
        other,
      ).toMatchObject({ ok: false, code: 'error.federation.peer_unavailable' });
    }
  });

  it('lists revocations for 24 hours from the clock, and revokes per peer', async () => {
    const { fedA, clock } = await pair();
    const one = await fedA.mint(B, 's');
    await fedA.mint(B, 's');
    expect(await fedA.revokePeer(`${B}/`)).toBe(2);
    expect((await fedA.revokedRecord()).revoked).toHaveLength(2);
    clock.advance(86_400_000 - 1);
    expect((await fedA.revokedRecord()).revoked.map((r) => r.jti)).toContain(one.claims.jti);
    clock.advance(1);
    expect(await fedA.revokedRecord()).toEqual({ issuer: A, revoked: [] });
  });
});
