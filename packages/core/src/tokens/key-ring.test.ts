import { ed25519 } from '@noble/curves/ed25519.js';
import { SignJWT, importJWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { toBase64url } from '../encoding/bytes.js';
import { SecretBox } from '../secrets/secret-box.js';
import { FakeClock, MemoryStore, SeededRandom, testSecretBox } from '../testing/index.js';
import { AccessTokens } from './access-token.js';
import { KeyRing } from './key-ring.js';

const ISSUER = 'https://svc.example.org';

/** A memory store that counts how often the whole ring is read. */
class CountingStore extends MemoryStore {
  reads = 0;
  override async listSigningKeys() {
    this.reads++;
    return super.listSigningKeys();
  }
}

/** A well-formed EdDSA token under a key nobody has: its kid names nothing in the ring. */
async function garbageToken(i: number): Promise<string> {
  const seed = new Uint8Array(32).fill(i % 251);
  const key = await importJWK(
    { kty: 'OKP', crv: 'Ed25519', x: toBase64url(ed25519.getPublicKey(seed)), d: toBase64url(seed) },
    'EdDSA',
  );
  return new SignJWT({ sub: 'a', sid: 's', jti: '0190a000-0000-7000-8000-000000000001' })
    .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT', kid: `made-up-${i}` })
    .setIssuedAt()
    .setExpirationTime('10m')
    .setIssuer(ISSUER)
    .sign(key);
}

describe('KeyRing: unknown kids', () => {
  it('re-reads the store at most once per interval however many made-up kids arrive, together or one by one', async () => {
    const store = new CountingStore();
    const clock = new FakeClock();
    const random = new SeededRandom(3);
    const ring = new KeyRing({
      store,
      clock,
      random,
      graceMs: 3_600_000,
      box: testSecretBox(),
      unknownKidReloadMs: 1_000,
    });
    await ring.init();
    const tokens = new AccessTokens({ keyRing: ring, clock, random, issuer: ISSUER });
    const garbage = await Promise.all(Array.from({ length: 200 }, (_, i) => garbageToken(i)));
    // Past the first interval after start, 200 at once: one read, shared.
    clock.advance(1_000);
    const before = store.reads;
    const verdicts = await Promise.all(garbage.map((t) => tokens.verify(t)));
    expect(verdicts.every((v) => v === null)).toBe(true);
    expect(store.reads - before).toBe(1);
    // Then 200 one by one over ten seconds (one every 50 ms): at most one read per second.
    const sequential = store.reads;
    for (const t of garbage) {
      clock.advance(50);
      expect(await tokens.verify(t)).toBeNull();
    }
    expect(store.reads - sequential).toBeLessThanOrEqual(10);
    expect(store.reads - sequential).toBeGreaterThanOrEqual(1);
  });

  it('still learns a key another process rotated in, within the interval', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    const mine = new KeyRing({
      store,
      clock,
      random: new SeededRandom(4),
      graceMs: 3_600_000,
      box: testSecretBox(),
      unknownKidReloadMs: 1_000,
    });
    const theirs = new KeyRing({ store, clock, random: new SeededRandom(5), graceMs: 3_600_000, box: testSecretBox() });
    await mine.init();
    await theirs.init();
    const myTokens = new AccessTokens({ keyRing: mine, clock, random: new SeededRandom(6), issuer: ISSUER });
    const theirTokens = new AccessTokens({ keyRing: theirs, clock, random: new SeededRandom(7), issuer: ISSUER });
    clock.advance(1_000);
    // A made-up kid spends this interval's read...
    expect(await myTokens.verify(await garbageToken(1))).toBeNull();
    await theirs.rotate();
    const fresh = (await theirTokens.issue('acct', 'sess')).token;
    // ...so the rotated-in key is unknown here until the interval has passed, then known.
    expect(await myTokens.verify(fresh)).toBeNull();
    clock.advance(1_000);
    expect(await myTokens.verify(fresh)).toMatchObject({ accountId: 'acct', sessionId: 'sess' });
  });
});

describe('KeyRing: a rotation seen late by another process', () => {
  it('a token the other process signed with the retired key before it re-read the ring verifies for the whole of its life, at the shortest grace', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    // The shortest grace a deployment may set: the access token's lifetime.
    const graceMs = 900_000;
    const rotating = new KeyRing({ store, clock, random: new SeededRandom(4), graceMs, box: testSecretBox() });
    const late = new KeyRing({ store, clock, random: new SeededRandom(5), graceMs, box: testSecretBox() });
    await rotating.init();
    await late.init();
    const lateTokens = new AccessTokens({ keyRing: late, clock, random: new SeededRandom(7), issuer: ISSUER });
    const oldKid = (await late.activeKey()).kid;
    clock.advance(1_000);
    await rotating.rotate();
    // The other process signs on with the key it read last, until its next re-read of the ring.
    clock.advance(58_000);
    const issued = await lateTokens.issue('acct', 'sess');
    expect(JSON.parse(Buffer.from(issued.token.split('.')[0]!, 'base64url').toString()).kid).toBe(oldKid);
    // A second before that token runs out, it still verifies (everywhere: both rings read the store).
    clock.advance(900_000 - 1_000);
    await rotating.reload();
    const verifier = new AccessTokens({ keyRing: rotating, clock, random: new SeededRandom(8), issuer: ISSUER });
    expect(await verifier.verify(issued.token)).toMatchObject({ accountId: 'acct', sessionId: 'sess' });
  });
});

describe('KeyRing: private keys at rest', () => {
  const rawRecord = (seedByte: number, kid: string, createdAt: number, retiredAt: number | null = null) => {
    const seed = new Uint8Array(32).fill(seedByte);
    return {
      kid,
      privateKey: toBase64url(seed),
      publicKey: toBase64url(ed25519.getPublicKey(seed)),
      createdAt,
      retiredAt,
    };
  };

  it('never hands the store a raw seed: a generated or rotated key is stored sealed', async () => {
    const store = new MemoryStore();
    const ring = new KeyRing({
      store,
      clock: new FakeClock(),
      random: new SeededRandom(8),
      graceMs: 3_600_000,
      box: testSecretBox(),
    });
    await ring.init();
    await ring.rotate();
    const active = await ring.activeKey();
    expect(store.signingKeys).toHaveLength(2);
    for (const r of store.signingKeys) {
      expect(r.privateKey.startsWith('v1.')).toBe(true);
      expect(r.privateKey).not.toContain(active.seed);
    }
  });

  it('seals keys an earlier build stored raw, in place, once, with two processes starting at once', async () => {
    const store = new MemoryStore();
    store.signingKeys = [rawRecord(1, 'old', 1, 5), rawRecord(2, 'cur', 5)];
    const raws = store.signingKeys.map((r) => r.privateKey);
    const clock = new FakeClock();
    const rings = [1, 2].map(
      (i) =>
        new KeyRing({
          store,
          clock,
          random: new SeededRandom(i),
          graceMs: 3_600_000,
          box: testSecretBox(new SeededRandom(i)),
        }),
    );
    await Promise.all(rings.map((r) => r.init()));
    const sealed = store.signingKeys.map((r) => r.privateKey);
    expect(sealed.every((v) => v.startsWith('v1.'))).toBe(true);
    for (const raw of raws) expect(sealed.join(' ')).not.toContain(raw);
    // Both sign with the key that was current, and each verifies the other's tokens.
    const [a, b] = rings.map(
      (keyRing, i) => new AccessTokens({ keyRing, clock, random: new SeededRandom(10 + i), issuer: ISSUER }),
    );
    expect((await rings[0]!.activeKey()).seed).toBe(raws[1]);
    expect(await b!.verify((await a!.issue('x', 'y')).token)).toMatchObject({ accountId: 'x' });
    // A later start finds nothing to seal and changes nothing.
    await new KeyRing({ store, clock, random: new SeededRandom(3), graceMs: 3_600_000, box: testSecretBox() }).init();
    expect(store.signingKeys.map((r) => r.privateKey)).toEqual(sealed);
  });

  it('refuses to start under another server key, naming SVC_SECRET_KEY', async () => {
    const store = new MemoryStore();
    await new KeyRing({
      store,
      clock: new FakeClock(),
      random: new SeededRandom(1),
      graceMs: 3_600_000,
      box: testSecretBox(),
    }).init();
    const other = new SecretBox({ key: new Uint8Array(32).fill(1), random: new SeededRandom(2) });
    await expect(
      new KeyRing({
        store,
        clock: new FakeClock(),
        random: new SeededRandom(3),
        graceMs: 3_600_000,
        box: other,
      }).init(),
    ).rejects.toThrow(/SVC_SECRET_KEY/);
  });
});
