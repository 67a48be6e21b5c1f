import { ed25519 } from '@noble/curves/ed25519.js';
import { importJWK, type CryptoKey, type JWK } from 'jose';
import { toBase64url } from '../encoding/bytes.js';
import { guard } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { Random } from '../ports/random.js';
import type { Ed25519Key } from '../ports/signer.js';
import type { SigningKeyRecord, SigningKeyStore } from '../ports/signing-key-store.js';

export interface KeyRingOptions {
  readonly store: SigningKeyStore;
  readonly clock: Clock;
  readonly random: Random;
  /** How long a retired key still verifies. Never shorter than the access-token lifetime. */
  readonly graceMs: number;
  /** How often the ring re-reads the store to learn rotations made by other processes. */
  readonly reloadEveryMs?: number;
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
 * the same ring. The newest active key signs; a retired key verifies until retiredAt + grace.
 */
export class KeyRing {
  readonly #o: Required<KeyRingOptions>;
  #records: SigningKeyRecord[] = [];
  #loadedAt = -Infinity;
  readonly #imported = new Map<string, Promise<CryptoKey>>();

  constructor(options: KeyRingOptions) {
    this.#o = { reloadEveryMs: 60_000, ...options };
  }

  static generate(random: Random, now: number): SigningKeyRecord {
    const seed = random.bytes(32);
    const publicKey = ed25519.getPublicKey(seed);
    const kid = toBase64url(random.bytes(9));
    return { kid, privateKey: toBase64url(seed), publicKey: toBase64url(publicKey), createdAt: now, retiredAt: null };
  }

  /** Loads the ring, creating the first key on a fresh store. */
  async init(): Promise<void> {
    const now = this.#o.clock.now();
    this.#records = await this.#o.store.ensureSigningKey(KeyRing.generate(this.#o.random, now));
    this.#loadedAt = now;
  }

  async reload(): Promise<void> {
    this.#records = await guard('error.auth.unavailable', 'loading signing keys', () => this.#o.store.listSigningKeys());
    this.#loadedAt = this.#o.clock.now();
  }

  async #fresh(): Promise<void> {
    if (this.#o.clock.now() - this.#loadedAt >= this.#o.reloadEveryMs) await this.reload();
  }

  /** Retires the active key and starts signing with a new one. */
  async rotate(): Promise<SigningKeyRecord> {
    const now = this.#o.clock.now();
    const next = KeyRing.generate(this.#o.random, now);
    await this.#o.store.rotateSigningKey(next, now);
    await this.reload();
    return next;
  }

  #verifies(record: SigningKeyRecord, now: number): boolean {
    return record.retiredAt === null || now < record.retiredAt + this.#o.graceMs;
  }

  /** True while tokens under `kid` may still be accepted (cheap; used by the verified-token cache). */
  verifies(kid: string, now: number): boolean {
    const record = this.#records.find((r) => r.kid === kid);
    return record !== undefined && this.#verifies(record, now);
  }

  async signingKey(): Promise<{ kid: string; key: CryptoKey }> {
    const active = await this.#active();
    return { kid: active.kid, key: await this.#import(active, true) };
  }

  /** The key that signs now, as its seed, for a platform's own signer (see ports/signer.ts). */
  async activeKey(): Promise<Ed25519Key> {
    const active = await this.#active();
    return { kid: active.kid, seed: active.privateKey, publicKey: active.publicKey };
  }

  async #active(): Promise<SigningKeyRecord> {
    await this.#fresh();
    const active = this.#records.filter((r) => r.retiredAt === null).sort((a, b) => b.createdAt - a.createdAt)[0];
    if (!active) throw new Error('no active signing key');
    return active;
  }

  /** The verification key for `kid`, re-reading the store once if another process rotated. */
  async verificationKey(kid: string): Promise<CryptoKey | null> {
    await this.#fresh();
    let record = this.#records.find((r) => r.kid === kid);
    if (!record) {
      await this.reload();
      record = this.#records.find((r) => r.kid === kid);
    }
    if (!record || !this.#verifies(record, this.#o.clock.now())) return null;
    return this.#import(record, false);
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

  #import(record: SigningKeyRecord, secret: boolean): Promise<CryptoKey> {
    const id = `${record.kid}:${secret ? 'd' : 'x'}`;
    let key = this.#imported.get(id);
    if (!key) {
      const jwk: JWK = { kty: 'OKP', crv: 'Ed25519', x: record.publicKey, ...(secret ? { d: record.privateKey } : {}) };
      key = importJWK(jwk, 'EdDSA') as Promise<CryptoKey>;
      this.#imported.set(id, key);
    }
    return key;
  }
}
