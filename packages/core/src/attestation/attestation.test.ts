import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { toBase64url, toHex } from '../encoding/bytes.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryAttestationKeyStore } from '../testing/memory-attestation.js';
import { SeededRandom } from '../testing/seeded-random.js';
import { testSecretBox } from '../testing/secret-box.js';
import { SecretBox } from '../secrets/secret-box.js';
import type { AttestationHistoryEntry } from '../ports/attestation-key-store.js';
import { historyHash, historyPreimage, makeHistoryEntry, verifyHistory } from './history.js';
import { receiptClaims } from './receipt.js';
import { AttestationRing } from './ring.js';

// CBOR heads written out by hand (RFC 8949 §3), independent of cborg.
const textHead = (n: number): number[] => (n < 24 ? [0x60 | n] : [0x78, n]);
const text = (s: string): number[] => {
  const b = [...new TextEncoder().encode(s)];
  return [...textHead(b.length), ...b];
};
const uint = (n: number): number[] => {
  if (n < 24) return [n];
  if (n < 0x100) return [0x18, n];
  if (n < 0x10000) return [0x19, n >> 8, n & 0xff];
  return [0x1a, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
};
const bytes32 = (b: Uint8Array): number[] => [0x58, 0x20, ...b];

const seedA = new Uint8Array(32).fill(7);
const seedB = new Uint8Array(32).fill(9);
const seedC = new Uint8Array(32).fill(11);
const pub = (seed: Uint8Array): Uint8Array => ed25519.getPublicKey(seed);

describe('attestation history hashing', () => {
  it('hashes the hand-built canonical CBOR of [domain, seq, kid, key bytes, added_at, prev] (first entry, prev "")', () => {
    const key = pub(seedA);
    const expected = new Uint8Array([
      0x86,
      ...text('svc-attestation-history/v1'),
      ...uint(1),
      ...text('kid-one'),
      ...bytes32(key),
      ...uint(1_795_000_000),
      0x60,
    ]);
    // The domain is 26 bytes, so its head is the two bytes 0x78 0x1a; added_at needs a 4-byte uint.
    expect([...expected.slice(0, 3)]).toEqual([0x86, 0x78, 0x1a]);
    const link = { seq: 1, kid: 'kid-one', publicKey: toBase64url(key), addedAt: 1_795_000_000, prev: '' };
    expect(historyPreimage(link)).toEqual(expected);
    expect(historyHash(link)).toBe(toHex(sha256(expected)));
  });
  it('covers a later entry with a two-byte seq and a 64-character prev', () => {
    const key = pub(seedB);
    const prev = 'ab'.repeat(32);
    const expected = new Uint8Array([
      0x86,
      ...text('svc-attestation-history/v1'),
      0x19,
      0x01,
      0x2c,
      ...text('k2'),
      ...bytes32(key),
      0x18,
      200,
      0x78,
      0x40,
      ...new TextEncoder().encode(prev),
    ]);
    expect(historyHash({ seq: 300, kid: 'k2', publicKey: toBase64url(key), addedAt: 200, prev })).toBe(
      toHex(sha256(expected)),
    );
  });
  it('signs the first entry with its own key and each later one with the previous key, over the 32 hash bytes', () => {
    const e1 = makeHistoryEntry(null, { kid: 'a', publicKey: toBase64url(pub(seedA)), addedAt: 100 }, seedA);
    const e2 = makeHistoryEntry(e1, { kid: 'b', publicKey: toBase64url(pub(seedB)), addedAt: 200 }, seedA);
    expect(e1).toMatchObject({ seq: 1, prev: '' });
    expect(e2).toMatchObject({ seq: 2, prev: e1.hash });
    const sigOf = (e: AttestationHistoryEntry) => Uint8Array.from(Buffer.from(e.sig, 'base64url'));
    expect(ed25519.verify(sigOf(e1), Buffer.from(e1.hash, 'hex'), pub(seedA))).toBe(true);
    expect(ed25519.verify(sigOf(e2), Buffer.from(e2.hash, 'hex'), pub(seedA))).toBe(true);
    expect(ed25519.verify(sigOf(e2), Buffer.from(e2.hash, 'hex'), pub(seedB))).toBe(false);
  });
});

describe('verifyHistory', () => {
  const e1 = makeHistoryEntry(null, { kid: 'a', publicKey: toBase64url(pub(seedA)), addedAt: 100 }, seedA);
  const e2 = makeHistoryEntry(e1, { kid: 'b', publicKey: toBase64url(pub(seedB)), addedAt: 200 }, seedA);
  const e3 = makeHistoryEntry(e2, { kid: 'c', publicKey: toBase64url(pub(seedC)), addedAt: 300 }, seedB);
  it('accepts an intact chain and the empty one', () => {
    expect(verifyHistory([e1, e2, e3]).ok).toBe(true);
    expect(verifyHistory([]).ok).toBe(true);
  });
  it('refuses any changed field, a gap, a reordering and a signature by the wrong key', () => {
    const bad: AttestationHistoryEntry[][] = [
      [e1, { ...e2, addedAt: 201 }, e3],
      [e1, { ...e2, kid: 'B' }, e3],
      [e1, { ...e2, publicKey: toBase64url(pub(seedC)) }, e3],
      [e1, { ...e2, hash: e3.hash }, e3],
      [e1, e2, { ...e3, prev: e1.hash }],
      [e1, e3],
      [e2, e1, e3],
      [e1, e2, makeHistoryEntry(e2, { kid: 'c', publicKey: toBase64url(pub(seedC)), addedAt: 300 }, seedC)],
      [{ ...e1, sig: e2.sig }, e2, e3],
    ];
    for (const chain of bad)
      expect(verifyHistory(chain)).toMatchObject({ ok: false, code: 'error.attestation.history_invalid' });
  });
});

describe('AttestationRing', () => {
  const issuer = 'https://photos.example';
  const blob = {
    contentHash: 'c'.repeat(64),
    size: 1234,
    chargedTo: '0190a000-0000-7000-8000-000000000002',
    peer: null,
    storedAt: 0,
  };
  const blobs = { findBlob: async (h: string) => (h === blob.contentHash ? blob : null) };
  const ring = (store = new MemoryAttestationKeyStore(), clock = new FakeClock()) =>
    new AttestationRing({ store, blobs, clock, random: new SeededRandom(42), issuer, box: testSecretBox() });

  it('creates entry 1 on first start, and each rotation appends exactly one entry signed by the key before', async () => {
    const store = new MemoryAttestationKeyStore();
    const r = ring(store);
    await r.init();
    expect((await r.record()).history).toHaveLength(1);
    await r.rotate();
    await r.rotate();
    const rec = await r.record();
    expect(rec.history.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(rec.keys.map((k) => k.kid)).toEqual([rec.history[2]!.kid]);
    expect(rec.history.map((e) => e.retired_at === null)).toEqual([false, false, true]);
    expect(verifyHistory(await store.listAttestationHistory()).ok).toBe(true);
    // A second process starting on the same store keeps the existing chain.
    await ring(store).init();
    expect(await store.listAttestationHistory()).toHaveLength(3);
  });

  it('never publishes a signing key the history does not end with, though a rotation commits between its two reads', async () => {
    const store = new MemoryAttestationKeyStore();
    const r = ring(store);
    await r.init();
    const other = ring(store);
    await other.init();
    // The first time the keys are read, another process's rotation commits just before: the
    // history read beside it is the one from before the rotation.
    let interleave = true;
    const keysOf = store.listAttestationKeys.bind(store);
    store.listAttestationKeys = async () => {
      if (interleave) {
        interleave = false;
        await other.rotate();
      }
      return keysOf();
    };
    const rec = await r.record();
    expect(rec.history).toHaveLength(2);
    expect(rec.keys.map((k) => k.kid)).toEqual([rec.history.at(-1)!.kid]);
    expect(rec.history.map((e) => e.retired_at === null)).toEqual([false, true]);
  });

  it('signs receipts with exactly the decided claims, verifiable with jose from the published key', async () => {
    const clock = new FakeClock();
    const r = ring(new MemoryAttestationKeyStore(), clock);
    await r.init();
    const jws = (await r.receipt({
      uploaderId: '0190a000-0000-7000-8000-000000000001',
      uploadId: '0190c000-0000-7000-8000-000000000009',
      contentHash: blob.contentHash,
    }))!;
    const header = decodeProtectedHeader(jws);
    expect(header).toMatchObject({ alg: 'EdDSA', typ: 'svc-receipt+jwt' });
    const jwk = (await r.record()).keys.find((k) => k.kid === header.kid)!;
    const { payload } = await jwtVerify(jws, await importJWK(jwk, 'EdDSA'), { typ: 'svc-receipt+jwt', issuer });
    expect(payload).toEqual(
      receiptClaims(
        {
          issuer,
          uploaderId: '0190a000-0000-7000-8000-000000000001',
          uploadId: '0190c000-0000-7000-8000-000000000009',
          contentHash: blob.contentHash,
          size: 1234,
          chargedTo: blob.chargedTo,
        },
        clock.now(),
      ),
    );
    expect(Object.keys(payload).sort()).toEqual([
      'charged_to',
      'content_hash',
      'iat',
      'iss',
      'size',
      'sub',
      'upload_id',
    ]);
    expect(await r.receipt({ uploaderId: 'x', uploadId: 'y', contentHash: 'd'.repeat(64) })).toBeNull();
  });

  it('starts when another process writes the first key between its two reads (two processes on a fresh store)', async () => {
    const store = new MemoryAttestationKeyStore();
    let first = true;
    // This process reads an empty history; before it reads the keys, the other process commits
    // key and entry 1 together (as every store does, in one transaction).
    const racing = {
      listAttestationKeys: () => store.listAttestationKeys(),
      appendAttestationKey: store.appendAttestationKey.bind(store),
      resealAttestationKey: store.resealAttestationKey.bind(store),
      listAttestationHistory: async () => {
        const seen = await store.listAttestationHistory();
        if (first) {
          first = false;
          await ring(store).init();
        }
        return seen;
      },
    };
    await new AttestationRing({
      store: racing,
      blobs,
      clock: new FakeClock(),
      random: new SeededRandom(7),
      issuer,
      box: testSecretBox(),
    }).init();
    expect(await store.listAttestationHistory()).toHaveLength(1);
  });

  it('refuses to start on a tampered history or a key that is not the one its entry names', async () => {
    const store = new MemoryAttestationKeyStore();
    await ring(store).init();
    await ring(store).rotate();
    const history = await store.listAttestationHistory();
    const tampered = {
      listAttestationKeys: () => store.listAttestationKeys(),
      appendAttestationKey: () => Promise.resolve('stale' as const),
      resealAttestationKey: () => Promise.resolve(false),
      listAttestationHistory: async () => [history[0]!, { ...history[1]!, addedAt: history[1]!.addedAt + 1 }],
    };
    await expect(
      new AttestationRing({
        store: tampered,
        blobs,
        clock: new FakeClock(),
        random: new SeededRandom(1),
        issuer,
        box: testSecretBox(),
      }).init(),
    ).rejects.toMatchObject({ code: 'error.attestation.history_invalid' });
    const swapped = {
      ...tampered,
      listAttestationHistory: () => store.listAttestationHistory(),
      listAttestationKeys: async () =>
        (await store.listAttestationKeys()).map((k) => ({ ...k, privateKey: toBase64url(seedA) })),
    };
    await expect(
      new AttestationRing({
        store: swapped,
        blobs,
        clock: new FakeClock(),
        random: new SeededRandom(1),
        issuer,
        box: testSecretBox(),
      }).init(),
    ).rejects.toMatchObject({ code: 'error.attestation.history_invalid' });
    // A history emptied (or cut short) behind the server's back is refused too, not restarted.
    for (const cut of [[], history.slice(0, 1)]) {
      const truncated = { ...tampered, listAttestationHistory: async () => cut };
      await expect(
        new AttestationRing({
          store: truncated,
          blobs,
          clock: new FakeClock(),
          random: new SeededRandom(1),
          issuer,
          box: testSecretBox(),
        }).init(),
      ).rejects.toMatchObject({ code: 'error.attestation.history_invalid' });
    }
  });

  it('signs with the key the store names now: a rotation by another process is never signed past', async () => {
    const store = new MemoryAttestationKeyStore();
    const clock = new FakeClock();
    const serving = ring(store, clock);
    const cli = new AttestationRing({ store, blobs, clock, random: new SeededRandom(7), issuer, box: testSecretBox() });
    await serving.init();
    await cli.init();
    const request = { uploaderId: 'u', uploadId: 'x', contentHash: blob.contentHash };
    const before = decodeProtectedHeader((await serving.receipt(request))!).kid;
    const entry = await cli.rotate();
    expect(entry.kid).not.toBe(before);
    // No time passes: a cached choice of key would still sign with the retired one.
    expect(decodeProtectedHeader((await serving.receipt(request))!).kid).toBe(entry.kid);
  });

  it('stores keys sealed, and seals raw ones an earlier build left, in place, at start', async () => {
    const store = new MemoryAttestationKeyStore();
    const clock = new FakeClock();
    // An earlier build's history: two raw keys, the second vouched for by the first.
    const k1 = {
      kid: 'kid-1',
      privateKey: toBase64url(seedA),
      publicKey: toBase64url(ed25519.getPublicKey(seedA)),
      createdAt: 1_000,
      retiredAt: null,
    };
    const e1 = makeHistoryEntry(null, { kid: k1.kid, publicKey: k1.publicKey, addedAt: 1 }, seedA);
    await store.appendAttestationKey(k1, e1, 1_000);
    const seedB = new Uint8Array(32).fill(0xbb);
    const k2 = {
      kid: 'kid-2',
      privateKey: toBase64url(seedB),
      publicKey: toBase64url(ed25519.getPublicKey(seedB)),
      createdAt: 2_000,
      retiredAt: null,
    };
    await store.appendAttestationKey(
      k2,
      makeHistoryEntry(e1, { kid: k2.kid, publicKey: k2.publicKey, addedAt: 2 }, seedA),
      2_000,
    );
    await Promise.all([ring(store, clock).init(), ring(store, clock).init()]);
    const stored = await store.listAttestationKeys();
    expect(stored.map((k) => k.privateKey.startsWith('v1.'))).toEqual([true, true]);
    expect(stored.map((k) => k.privateKey)).not.toContain(k1.privateKey);
    expect(stored.map((k) => k.privateKey)).not.toContain(k2.privateKey);
    // The history is untouched and the sealed key still signs receipts that verify against it.
    const r = ring(store, clock);
    await r.init();
    const jws = (await r.receipt({ uploaderId: 'u', uploadId: 'x', contentHash: blob.contentHash }))!;
    expect(decodeProtectedHeader(jws).kid).toBe('kid-2');
    await jwtVerify(jws, await importJWK((await r.record()).keys[0]!, 'EdDSA'), { typ: 'svc-receipt+jwt', issuer });
    // Under another server key the ring does not start.
    const other = new AttestationRing({
      store,
      blobs,
      clock,
      random: new SeededRandom(1),
      issuer,
      box: new SecretBox({ key: new Uint8Array(32).fill(1), random: new SeededRandom(1) }),
    });
    await expect(other.init()).rejects.toThrow(/SVC_SECRET_KEY/);
  });
});
