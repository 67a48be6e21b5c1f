import { describe, expect, it, vi } from 'vitest';
import { toBase64url } from '../encoding/bytes.js';
import { FakeClock, MemoryStore, SeededRandom, testSecretBox } from '../testing/index.js';
import { AccessTokens } from './access-token.js';
import { KeyRing } from './key-ring.js';
import { signCompactJws, webCryptoSigner } from './signer.js';
import { uuidv7 } from '../encoding/uuid.js';

const ISSUER = 'https://svc.example.org';
const GRACE_MS = 3_600_000;

async function setup(cacheSize?: number) {
  const clock = new FakeClock();
  const random = new SeededRandom(7);
  const keyRing = new KeyRing({ store: new MemoryStore(), clock, random, graceMs: GRACE_MS, box: testSecretBox() });
  await keyRing.init();
  const tokens = new AccessTokens({
    keyRing,
    clock,
    random,
    issuer: ISSUER,
    ...(cacheSize !== undefined ? { cacheSize } : {}),
  });
  // Every signature check starts by fetching the key, so this counts cache misses.
  const keyLookups = vi.spyOn(keyRing, 'verificationKey');
  return { clock, keyRing, tokens, keyLookups };
}

/** The same token with another payload segment and the original signature left in place. */
function withPayload(token: string, claims: Record<string, unknown>): string {
  const [header, , signature] = token.split('.');
  return `${header}.${toBase64url(new TextEncoder().encode(JSON.stringify(claims)))}.${signature}`;
}

describe('AccessTokens: the verified-token cache', () => {
  it('checks a signature once, then answers repeat use of the exact string from the cache', async () => {
    const { tokens, keyLookups } = await setup();
    const { token, claims } = await tokens.issue('acct-1', 'sess-1');
    const first = await tokens.verify(token);
    expect(first).toMatchObject({
      accountId: 'acct-1',
      sessionId: 'sess-1',
      jti: claims.jti,
      expiresAt: claims.exp * 1000,
    });
    expect(keyLookups).toHaveBeenCalledTimes(1);
    expect(await tokens.verify(token)).toEqual(first);
    expect(await tokens.verify(token.slice(0))).toEqual(first);
    expect(keyLookups).toHaveBeenCalledTimes(1);
  });

  it('answers cached() synchronously only for a token verified before and still good', async () => {
    const { tokens, clock } = await setup();
    const { token } = await tokens.issue('acct-1', 'sess-1');
    expect(tokens.cached(token)).toBeUndefined();
    const verified = await tokens.verify(token);
    expect(tokens.cached(token)).toEqual(verified);
    expect(tokens.cached(`${token.slice(0, 10)}x${token.slice(11)}`)).toBeUndefined();
    clock.advance(900_000);
    expect(tokens.cached(token)).toBeUndefined();
    expect(await tokens.verify(token)).toBeNull();
  });

  it('never lets a forged token ride on a cached signature (the key is only part of the token)', async () => {
    const { tokens, keyLookups } = await setup();
    const { token, claims } = await tokens.issue('acct-1', 'sess-1');
    expect(await tokens.verify(token)).not.toBeNull();
    const forged = withPayload(token, { ...claims, sub: 'acct-2' });
    expect(forged.slice(-43)).toBe(token.slice(-43));
    expect(await tokens.verify(forged)).toBeNull();
    expect(keyLookups).toHaveBeenCalledTimes(2);
    // The genuine token still verifies afterwards.
    expect(await tokens.verify(token)).toMatchObject({ accountId: 'acct-1' });
  });

  it('refuses a cached token once it expires', async () => {
    const { tokens, clock } = await setup();
    const { token } = await tokens.issue('acct-1', 'sess-1');
    expect(await tokens.verify(token)).not.toBeNull();
    clock.advance(899_000);
    expect(await tokens.verify(token)).not.toBeNull();
    clock.advance(1_000);
    expect(await tokens.verify(token)).toBeNull();
  });

  it('refuses a cached token once its key has retired past the grace window', async () => {
    const { tokens, keyRing, clock } = await setup();
    const { token } = await tokens.issue('acct-1', 'sess-1');
    expect(await tokens.verify(token)).not.toBeNull();
    await keyRing.rotate();
    clock.advance(GRACE_MS - 1);
    // Still inside the grace window (and inside the token's own lifetime, which is shorter).
    const early = await tokens.issue('acct-1', 'sess-1');
    expect(await tokens.verify(early.token)).not.toBeNull();
    expect(await tokens.verify(token)).toBeNull(); // its own 15 minutes are long gone
  });

  it('drops a cached token whose key retired, even inside the token lifetime', async () => {
    const clock = new FakeClock();
    const random = new SeededRandom(8);
    // A grace window shorter than a token's life shows the key check on the cached path.
    const keyRing = new KeyRing({ store: new MemoryStore(), clock, random, graceMs: 60_000, box: testSecretBox() });
    await keyRing.init();
    const tokens = new AccessTokens({ keyRing, clock, random, issuer: ISSUER });
    const { token } = await tokens.issue('acct-1', 'sess-1');
    expect(await tokens.verify(token)).not.toBeNull();
    await keyRing.rotate();
    // The grace counts from the last moment another process may have signed with the key: one
    // re-read interval (a minute) after the rotation.
    clock.advance(119_000);
    expect(await tokens.verify(token)).not.toBeNull();
    clock.advance(1_000);
    expect(await tokens.verify(token)).toBeNull();
  });

  it('holds at most cacheSize tokens, dropping the oldest first', async () => {
    const { tokens, keyLookups } = await setup(2);
    const [a, b, c] = [await tokens.issue('a', 's'), await tokens.issue('b', 's'), await tokens.issue('c', 's')];
    for (const t of [a, b, c]) await tokens.verify(t.token);
    expect(keyLookups).toHaveBeenCalledTimes(3);
    await tokens.verify(c.token);
    await tokens.verify(b.token);
    expect(keyLookups).toHaveBeenCalledTimes(3); // b and c are cached
    await tokens.verify(a.token);
    expect(keyLookups).toHaveBeenCalledTimes(4); // a was evicted
  });

  it('refuses tampered, foreign-issuer and malformed tokens', async () => {
    const { tokens } = await setup();
    const { token, claims } = await tokens.issue('acct-1', 'sess-1');
    expect(await tokens.verify(withPayload(token, { ...claims, exp: claims.exp + 3600 }))).toBeNull();
    expect(await tokens.verify(`${token.slice(0, -2)}AA`)).toBeNull();
    expect(await tokens.verify('not.a.jwt')).toBeNull();
    expect(await tokens.verify('')).toBeNull();
    const other = await setup();
    const foreign = new AccessTokens({
      keyRing: other.keyRing,
      clock: other.clock,
      random: new SeededRandom(9),
      issuer: 'https://elsewhere.example',
    });
    expect(await tokens.verify((await foreign.issue('acct-1', 'sess-1')).token)).toBeNull();
  });

  it("refuses, even under the server's own key, claims issue never mints: another lifetime, a jti instant outside iat's second", async () => {
    const { tokens, keyRing, clock } = await setup();
    const { claims } = await tokens.issue('acct-1', 'sess-1');
    const key = await keyRing.activeKey();
    const signed = (c: Record<string, unknown>) =>
      signCompactJws({ alg: 'EdDSA', typ: 'JWT', kid: key.kid }, c, key, webCryptoSigner());
    // The same claims re-signed verify: the refusals below are the claims' doing.
    expect(await tokens.verify(await signed({ ...claims }))).not.toBeNull();
    expect(await tokens.verify(await signed({ ...claims, exp: claims.exp + 86_400 }))).toBeNull();
    expect(await tokens.verify(await signed({ ...claims, exp: claims.exp - 1 }))).toBeNull();
    // A jti from a year ahead would pass any access floor a password change sets.
    const future = uuidv7(clock.now() + 365 * 86_400_000, new Uint8Array(10));
    expect(await tokens.verify(await signed({ ...claims, jti: future }))).toBeNull();
  });
});
