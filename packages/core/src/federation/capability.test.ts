import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { FakeClock, MemoryStore, SeededRandom, testSecretBox } from '../testing/index.js';
import { AccessTokens } from '../tokens/access-token.js';
import { KeyRing } from '../tokens/key-ring.js';
import { CAPABILITY_TYP, capabilityClaims, peekCapability, signCapability, verifyCapability } from './capability.js';

const US = 'https://a.example';
const PEER = 'https://b.example';

async function setup() {
  const clock = new FakeClock();
  const random = new SeededRandom(3);
  const keyRing = new KeyRing({ store: new MemoryStore(), clock, random, graceMs: 3_600_000, box: testSecretBox() });
  await keyRing.init();
  const jwk = (await keyRing.jwks()).keys[0]!;
  const mint = async (over: Partial<ReturnType<typeof capabilityClaims>> = {}) => {
    const claims = {
      ...capabilityClaims({
        issuer: US,
        peer: PEER,
        subject: 'ann@a.example',
        now: clock.now(),
        random: random.bytes(10),
      }),
      ...over,
    };
    return { claims, token: await signCapability(claims, await keyRing.signingKey()) };
  };
  return { clock, random, keyRing, jwk, mint };
}

describe('capability tokens', () => {
  it('carries exactly the documented claims, typ and kid, five minutes by default', async () => {
    const { mint, jwk } = await setup();
    const { token, claims } = await mint();
    expect(Object.keys(claims).sort()).toEqual(['aud', 'exp', 'iat', 'iss', 'jti', 'scope', 'sub']);
    expect(claims.exp - claims.iat).toBe(300);
    expect(peekCapability(token)).toEqual({ kid: jwk.kid, issuer: US });
    expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString())).toEqual({
      alg: 'EdDSA',
      typ: CAPABILITY_TYP,
      kid: jwk.kid,
    });
    expect(() =>
      capabilityClaims({ issuer: US, peer: PEER, subject: 's', now: 0, random: new Uint8Array(10), ttlS: 3601 }),
    ).toThrow(RangeError);
  });

  it('verifies for its audience from its issuer, and for nothing else', async () => {
    const { mint, jwk, clock } = await setup();
    const { token, claims } = await mint();
    const expected = { issuer: US, audience: PEER, now: clock.now() };
    expect(await verifyCapability(token, jwk, expected)).toEqual({
      ok: true,
      value: { issuer: US, subject: 'ann@a.example', jti: claims.jti, expiresAt: claims.exp * 1000 },
    });
    expect((await verifyCapability(token, jwk, { ...expected, audience: 'https://c.example' })).ok).toBe(false);
    expect((await verifyCapability(token, jwk, { ...expected, issuer: 'https://c.example' })).ok).toBe(false);
    expect((await verifyCapability(token, jwk, { ...expected, now: clock.now() + 300_000 })).ok).toBe(false);
    expect((await verifyCapability(`${token.slice(0, -3)}AAA`, jwk, expected)).ok).toBe(false);
  });

  it('refuses an aud that is not exactly our base URL as one string, a list naming us included', async () => {
    const { mint, jwk, clock } = await setup();
    const expected = { issuer: US, audience: PEER, now: clock.now() };
    for (const aud of [[PEER, 'https://c.example'], [PEER], ['https://c.example', PEER]]) {
      const { token } = await mint({ aud: aud as unknown as string });
      expect(await verifyCapability(token, jwk, expected), JSON.stringify(aud)).toMatchObject({
        ok: false,
        code: 'error.federation.capability_invalid',
      });
    }
  });

  it('refuses a lifetime over an hour, another scope, and a non-UUIDv7 jti, even when signed', async () => {
    const { mint, jwk, clock } = await setup();
    const expected = { issuer: US, audience: PEER, now: clock.now() };
    const iat = Math.floor(clock.now() / 1000);
    expect((await verifyCapability((await mint({ exp: iat + 3601 })).token, jwk, expected)).ok).toBe(false);
    expect((await verifyCapability((await mint({ exp: iat + 3600 })).token, jwk, expected)).ok).toBe(true);
    expect((await verifyCapability((await mint({ scope: 'admin' as 'lookup' })).token, jwk, expected)).ok).toBe(false);
    expect((await verifyCapability((await mint({ jti: 'not-a-uuid' })).token, jwk, expected)).ok).toBe(false);
  });

  it('is never an access token, and an access token is never a capability token', async () => {
    const { keyRing, clock, random, jwk, mint } = await setup();
    const access = new AccessTokens({ keyRing, clock, random, issuer: US });
    // A capability minted by this very server for itself, even with an sid added, is refused.
    const { claims } = await mint({ aud: US });
    const capabilityShaped = await new SignJWT({ ...claims, sid: 'sess-1' })
      .setProtectedHeader({ alg: 'EdDSA', typ: CAPABILITY_TYP, kid: jwk.kid })
      .sign((await keyRing.signingKey()).key);
    expect(await access.verify(capabilityShaped)).toBeNull();
    const { token: accessToken } = await access.issue('acct-1', 'sess-1');
    expect(peekCapability(accessToken)).toBeNull();
    expect((await verifyCapability(accessToken, jwk, { issuer: US, audience: US, now: clock.now() })).ok).toBe(false);
  });
});
