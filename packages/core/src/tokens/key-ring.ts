import { ed25519 } from '@noble/curves/ed25519.js';
import { importJWK, type CryptoKey, type JWK } from 'jose';
import { toBase64url } from '../encoding/bytes.js';
import { CoreError, guard } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { Random } from '../ports/random.js';
import type { Ed25519Key } from '../ports/signer.js';
import type { SigningKeyRecord, SigningKeyStore } from '../ports/signing-key-store.js';
import { openKeySeed, sealKeySeed, sealRawKeys } from '../secrets/key-seal.js';
import { isSealed, type SecretSealer } from '../secrets/secret-box.js';

export interface KeyRingOptions {
  readonly store: SigningKeyStore;
  readonly clock: Clock;
  readonly random: Random;
  /** How long a retired key still verifies. Never shorter than the access-token lifetime. */
  readonly graceMs: number;
  /** Seals the private keys at rest under the server key: the store never holds one in the clear. */
  readonly box: SecretSealer;
  /** How often the ring re-reads the store to learn rotations made by other processes. */
  readonly reloadEveryMs?: number;
  /**
   * At most one re-read per this interval for a token whose kid the ring does not know (default
   * 1 s). Anyone can send a token with a made-up kid; without a bound each would be a database
   * read. A key rotated in by another process is still learned within this interval.
   */
  readonly unknownKidReloadMs?: number;
}

export interface PublicJwk extends JWK {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

/**
 * Access-token signing keys, persisted through the store so every process signs and verifies with
 * the same ring. The newest active key signs; a retired key verifies until retiredAt + the re-read
 * interval + grace.
 * Private keys are stored sealed under the server key and opened only here, once per kid.
 */
export class KeyRing {
  readonly #o: Required<KeyRingOptions>;
  #records: SigningKeyRecord[] = [];
  #loadedAt = -Infinity;
  /** The one store read in flight, shared by every caller that needs the ring re-read meanwhile. */
  #reloading: Promise<void> | null = null;
  readonly #imported = new Map<string, Promise<CryptoKey>>();
  /** Opened seeds by kid: a kid's key never changes, so an opened one never goes stale. */
  readonly #opened = new Map<string, Promise<Ed25519Key>>();

  constructor(options: KeyRingOptions) {
    this.#o = { reloadEveryMs: 60_000, unknownKidReloadMs: 1_000, ...options };
  }

  async #generate(now: number): Promise<SigningKeyRecord> {
    const seed = this.#o.random.bytes(32);
    const publicKey = ed25519.getPublicKey(seed);
    const kid = toBase64url(this.#o.random.bytes(9));
    return {
      kid,
      privateKey: await sealKeySeed(this.#o.box, 'signing', kid, seed),
      publicKey: toBase64url(publicKey),
      createdAt: now,
      retiredAt: null,
    };
  }

  /**
   * Loads the ring, creating the first key on a fresh store. Keys an earlier build stored raw are
   * sealed in place first, and the signing key must open under this server key: a process that
   * could not sign stops at start rather than failing every sign-in.
   */
  async init(): Promise<void> {
    const now = this.#o.clock.now();
    const records = await this.#o.store.ensureSigningKey(await this.#generate(now));
    if (records.some((r) => !isSealed(r.privateKey))) {
      await sealRawKeys(this.#o.box, 'signing', records, (kid, from, to) =>
        this.#o.store.resealSigningKey(kid, from, to),
      );
      // Re-read: where another process sealed a key first, its sealed value is the one stored.
      this.#records = await this.#o.store.listSigningKeys();
    } else {
      this.#records = records;
    }
    this.#loadedAt = now;
    await this.activeKey();
  }

  /** Re-reads the ring from the store; callers arriving while a read is in flight share it. */
  reload(): Promise<void> {
    this.#reloading ??= (async () => {
      try {
        const records = await guard('error.auth.unavailable', 'loading signing keys', () =>
          this.#o.store.listSigningKeys(),
        );
        this.#records = records;
        this.#loadedAt = this.#o.clock.now();
      } finally {
        this.#reloading = null;
      }
    })();
    return this.#reloading;
  }

  async #fresh(): Promise<void> {
    if (this.#o.clock.now() - this.#loadedAt >= this.#o.reloadEveryMs) await this.reload();
  }

  /** Retires the active key and starts signing with a new one. */
  async rotate(): Promise<SigningKeyRecord> {
    const now = this.#o.clock.now();
    const next = await this.#generate(now);
    await this.#o.store.rotateSigningKey(next, now);
    await this.reload();
    return next;
  }

  /**
   * A retired key verifies for the grace window after the last moment any process may have signed
   * with it: each process learns of a rotation at its next re-read of the ring, so up to one
   * re-read interval after the rotation committed.
   */
  #verifies(record: SigningKeyRecord, now: number): boolean {
    return record.retiredAt === null || now < record.retiredAt + this.#o.reloadEveryMs + this.#o.graceMs;
  }

  /** True while tokens under `kid` may still be accepted (cheap; used by the verified-token cache). */
  verifies(kid: string, now: number): boolean {
    const record = this.#records.find((r) => r.kid === kid);
    return record !== undefined && this.#verifies(record, now);
  }

  async signingKey(): Promise<{ kid: string; key: CryptoKey }> {
    const active = await this.activeKey();
    return { kid: active.kid, key: await this.#import({ kid: active.kid, publicKey: active.publicKey }, active.seed) };
  }

  /** The key that signs now, as its seed, for a platform's own signer (see ports/signer.ts). */
  async activeKey(): Promise<Ed25519Key> {
    const active = await this.#active();
    let opened = this.#opened.get(active.kid);
    if (opened === undefined) {
      opened = openKeySeed(this.#o.box, 'signing', active).then((seed) => ({
        kid: active.kid,
        seed: toBase64url(seed),
        publicKey: active.publicKey,
      }));
      this.#opened.set(active.kid, opened);
      // A failure is not remembered: the next call tries again (and fails again if the key is wrong).
      opened.catch(() => this.#opened.delete(active.kid));
    }
    return opened;
  }

  async #active(): Promise<SigningKeyRecord> {
    await this.#fresh();
    const active = this.#records.filter((r) => r.retiredAt === null).sort((a, b) => b.createdAt - a.createdAt)[0];
    if (!active) throw new CoreError('error.internal', 'no active signing key');
    return active;
  }

  /**
   * The verification key for `kid`. An unknown kid may be a key another process rotated in since
   * the last read, so the ring is re-read, but at most once per `unknownKidReloadMs` (and a read
   * already in flight is shared): a stream of made-up kids costs one read per interval, and a real
   * new key is learned within it.
   */
  async verificationKey(kid: string): Promise<CryptoKey | null> {
    await this.#fresh();
    let record = this.#records.find((r) => r.kid === kid);
    if (!record) {
      if (this.#reloading !== null) await this.#reloading;
      else if (this.#o.clock.now() - this.#loadedAt >= this.#o.unknownKidReloadMs) await this.reload();
      record = this.#records.find((r) => r.kid === kid);
    }
    if (!record || !this.#verifies(record, this.#o.clock.now())) return null;
    return this.#import(record, null);
  }

  /** The keys that currently verify, as a public JWKS. */
  async jwks(): Promise<{ keys: PublicJwk[] }> {
    await this.#fresh();
    const now = this.#o.clock.now();
    return {
      keys: this.#records
        .filter((r) => this.#verifies(r, now))
        .map((r) => ({ kty: 'OKP', crv: 'Ed25519', x: r.publicKey, kid: r.kid, alg: 'EdDSA', use: 'sig' })),
    };
  }

  /** The public key of `record`, or its private key when given the opened seed. */
  #import(record: { kid: string; publicKey: string }, seed: string | null): Promise<CryptoKey> {
    const id = `${record.kid}:${seed !== null ? 'd' : 'x'}`;
    let key = this.#imported.get(id);
    if (!key) {
      const jwk: JWK = { kty: 'OKP', crv: 'Ed25519', x: record.publicKey, ...(seed !== null ? { d: seed } : {}) };
      key = importJWK(jwk, 'EdDSA') as Promise<CryptoKey>;
      this.#imported.set(id, key);
    }
    return key;
  }
}
