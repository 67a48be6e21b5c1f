import { ed25519 } from '@noble/curves/ed25519.js';
import { importJWK, SignJWT, type CryptoKey, type JWK } from 'jose';
import { fromBase64url, toBase64url } from '../encoding/bytes.js';
import { CoreError, guard } from '../errors.js';
import type { AttestationHistoryEntry, AttestationKeyRecord, AttestationKeyStore } from '../ports/attestation-key-store.js';
import type { Clock } from '../ports/clock.js';
import type { QuotaLedger } from '../ports/quota-ledger.js';
import type { Random } from '../ports/random.js';
import type { PublicJwk } from '../tokens/key-ring.js';
import { makeHistoryEntry, verifyHistory } from './history.js';
import { RECEIPT_TYP, receiptClaims } from './receipt.js';

export interface AttestationRingOptions {
  readonly store: AttestationKeyStore;
  /** Where a stored blob's size and payer are read from, to attest them. */
  readonly blobs: Pick<QuotaLedger, 'findBlob'>;
  readonly clock: Clock;
  readonly random: Random;
  /** The receipts' `iss`: the server's base URL. */
  readonly issuer: string;
  /** How often the signing key is re-read, to follow rotations made by another process. */
  readonly reloadEveryMs?: number;
}

/** The published record: the keys that sign now, and the whole history. */
export interface AttestationRecord {
  readonly keys: PublicJwk[];
  readonly history: { seq: number; kid: string; jwk: PublicJwk; added_at: number; retired_at: string | null; prev: string; hash: string; sig: string }[];
}

export interface ReceiptRequest {
  readonly uploaderId: string;
  readonly uploadId: string;
  readonly contentHash: string;
}

const jwkOf = (kid: string, x: string): PublicJwk => ({ kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' });

/**
 * The storage-attestation key ring: its own Ed25519 keys (never the access-token keys), a
 * hash-chained history where each key is vouched for by the one before, and the receipts.
 */
export class AttestationRing {
  readonly #o: Required<AttestationRingOptions>;
  #keys: AttestationKeyRecord[] = [];
  #loadedAt = -Infinity;
  readonly #imported = new Map<string, Promise<CryptoKey>>();

  constructor(options: AttestationRingOptions) {
    this.#o = { reloadEveryMs: 60_000, ...options };
  }

  #generate(now: number): AttestationKeyRecord {
    const seed = this.#o.random.bytes(32);
    return { kid: toBase64url(this.#o.random.bytes(9)), privateKey: toBase64url(seed), publicKey: toBase64url(ed25519.getPublicKey(seed)), createdAt: now, retiredAt: null };
  }

  /**
   * Loads the ring, creating the first key (history entry 1) on a fresh store, and re-verifies the
   * whole chain and that every stored key is the one its entry names. Throws CoreError
   * `error.attestation.history_invalid` when anything fails: a server must not start on a history
   * it cannot stand behind.
   */
  async init(): Promise<void> {
    let history = await this.#o.store.listAttestationHistory();
    if (history.length === 0 && (await this.#o.store.listAttestationKeys()).length > 0) {
      // Keys without a history: it was removed, not never made. Starting a new chain would hide that.
      throw new CoreError('error.attestation.history_invalid', 'attestation keys exist but their history is empty');
    }
    if (history.length === 0) {
      const first = this.#generate(this.#o.clock.now());
      const entry = makeHistoryEntry(null, { kid: first.kid, publicKey: first.publicKey, addedAt: Math.floor(first.createdAt / 1000) }, fromBase64url(first.privateKey)!);
      // 'stale': another process started first and wrote entry 1; its key is the one to use.
      await this.#o.store.appendAttestationKey(first, entry, first.createdAt);
      history = await this.#o.store.listAttestationHistory();
    }
    const keys = await this.#o.store.listAttestationKeys();
    this.#check(history, keys);
    this.#keys = keys;
    this.#loadedAt = this.#o.clock.now();
  }

  #check(history: readonly AttestationHistoryEntry[], keys: readonly AttestationKeyRecord[]): void {
    const verified = verifyHistory(history);
    if (!verified.ok) throw new CoreError('error.attestation.history_invalid', verified.detail ?? 'attestation history does not verify');
    const byKid = new Map(history.map((e) => [e.kid, e]));
    for (const k of keys) {
      const e = byKid.get(k.kid);
      const seed = fromBase64url(k.privateKey);
      if (!e || e.publicKey !== k.publicKey || seed === null || toBase64url(ed25519.getPublicKey(seed)) !== k.publicKey) {
        throw new CoreError('error.attestation.history_invalid', `attestation key ${k.kid} is not the key its history entry names`);
      }
    }
    const active = keys.filter((k) => k.retiredAt === null);
    const last = history[history.length - 1];
    if (active.length !== 1 || last === undefined || active[0]!.kid !== last.kid) {
      throw new CoreError('error.attestation.history_invalid', 'the signing attestation key is not the last entry of the history');
    }
  }

  async #reload(): Promise<void> {
    this.#keys = await guard('error.store.unavailable', 'loading attestation keys', () => this.#o.store.listAttestationKeys());
    this.#loadedAt = this.#o.clock.now();
  }

  /**
   * Retires the signing key and appends a new one, vouched for by the retiring key. Appends
   * exactly one entry; a rotation racing another process's is retried on the new chain.
   */
  async rotate(): Promise<AttestationHistoryEntry> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const history = await this.#o.store.listAttestationHistory();
      const keys = await this.#o.store.listAttestationKeys();
      this.#check(history, keys);
      const last = history[history.length - 1]!;
      const signer = keys.find((k) => k.kid === last.kid)!;
      const now = this.#o.clock.now();
      const next = this.#generate(now);
      const entry = makeHistoryEntry(last, { kid: next.kid, publicKey: next.publicKey, addedAt: Math.floor(now / 1000) }, fromBase64url(signer.privateKey)!);
      if ((await this.#o.store.appendAttestationKey(next, entry, now)) === 'appended') {
        await this.#reload();
        return entry;
      }
    }
    throw new CoreError('error.conflict', 'attestation keys kept rotating underneath; try again');
  }

  /**
   * A signed receipt for a finalized upload: the blob stored under its hash, its size and whose
   * ledger it is charged to, as the store holds them now. Null when no such blob is stored.
   */
  async receipt(request: ReceiptRequest): Promise<string | null> {
    const blob = await guard('error.store.unavailable', 'blob read', () => this.#o.blobs.findBlob(request.contentHash));
    if (!blob) return null;
    if (this.#o.clock.now() - this.#loadedAt >= this.#o.reloadEveryMs) await this.#reload();
    const active = this.#keys.find((k) => k.retiredAt === null);
    if (!active) throw new CoreError('error.internal', 'no active attestation key');
    const now = this.#o.clock.now();
    const claims = receiptClaims({ issuer: this.#o.issuer, uploaderId: request.uploaderId, uploadId: request.uploadId, contentHash: blob.contentHash, size: blob.size, chargedTo: blob.chargedTo }, now);
    return new SignJWT({ ...claims }).setProtectedHeader({ alg: 'EdDSA', typ: RECEIPT_TYP, kid: active.kid }).sign(await this.#privateKey(active));
  }

  /** The public record, read from the store on each call so a rotation anywhere shows at once. */
  async record(): Promise<AttestationRecord> {
    const [history, keys] = await guard('error.store.unavailable', 'loading attestation keys', () =>
      Promise.all([this.#o.store.listAttestationHistory(), this.#o.store.listAttestationKeys()]),
    );
    const retired = new Map(keys.map((k) => [k.kid, k.retiredAt]));
    return {
      keys: keys.filter((k) => k.retiredAt === null).map((k) => jwkOf(k.kid, k.publicKey)),
      history: history.map((e) => {
        const at = retired.get(e.kid) ?? null;
        return { seq: e.seq, kid: e.kid, jwk: jwkOf(e.kid, e.publicKey), added_at: e.addedAt, retired_at: at === null ? null : new Date(at).toISOString(), prev: e.prev, hash: e.hash, sig: e.sig };
      }),
    };
  }

  #privateKey(k: AttestationKeyRecord): Promise<CryptoKey> {
    let key = this.#imported.get(k.kid);
    if (!key) {
      const jwk: JWK = { kty: 'OKP', crv: 'Ed25519', x: k.publicKey, d: k.privateKey };
      key = importJWK(jwk, 'EdDSA') as Promise<CryptoKey>;
      this.#imported.set(k.kid, key);
    }
    return key;
  }
}
