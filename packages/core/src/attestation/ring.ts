import { ed25519 } from '@noble/curves/ed25519.js';
import { importJWK, SignJWT, type CryptoKey, type JWK } from 'jose';
import { toBase64url } from '../encoding/bytes.js';
import { CoreError, guard } from '../errors.js';
import type {
  AttestationHistoryEntry,
  AttestationKeyRecord,
  AttestationKeyStore,
} from '../ports/attestation-key-store.js';
import type { Clock } from '../ports/clock.js';
import type { QuotaLedger } from '../ports/quota-ledger.js';
import type { Random } from '../ports/random.js';
import type { PublicJwk } from '../tokens/key-ring.js';
import { openKeySeed, sealKeySeed, sealRawKeys } from '../secrets/key-seal.js';
import { isSealed, type SecretSealer } from '../secrets/secret-box.js';
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
  /** Seals the private keys at rest under the server key: the store never holds one in the clear. */
  readonly box: SecretSealer;
}

/** The published record: the keys that sign now, and the whole history. */
export interface AttestationRecord {
  readonly keys: PublicJwk[];
  readonly history: {
    seq: number;
    kid: string;
    jwk: PublicJwk;
    added_at: number;
    retired_at: string | null;
    prev: string;
    hash: string;
    sig: string;
  }[];
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
 * Private keys are stored sealed under the server key. Which key signs is read from the store
 * with every receipt, so once a rotation commits no process signs with the retired key.
 */
export class AttestationRing {
  readonly #o: AttestationRingOptions;
  /** Imported private keys by kid: a kid's key never changes, so this never goes stale. */
  readonly #imported = new Map<string, Promise<CryptoKey>>();

  constructor(options: AttestationRingOptions) {
    this.#o = options;
  }

  async #generate(now: number): Promise<{ record: AttestationKeyRecord; seed: Uint8Array }> {
    const seed = this.#o.random.bytes(32);
    const kid = toBase64url(this.#o.random.bytes(9));
    const record = {
      kid,
      privateKey: await sealKeySeed(this.#o.box, 'attestation', kid, seed),
      publicKey: toBase64url(ed25519.getPublicKey(seed)),
      createdAt: now,
      retiredAt: null,
    };
    return { record, seed };
  }

  /** The seed of a stored key; a key that does not open is a history the server cannot stand behind. */
  async #seed(k: AttestationKeyRecord): Promise<Uint8Array> {
    try {
      return await openKeySeed(this.#o.box, 'attestation', k);
    } catch (e) {
      throw new CoreError('error.attestation.history_invalid', (e as Error).message);
    }
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
      // Another process may have committed key and entry 1 (one transaction) between the two reads:
      // read the history again, after the keys. Still empty, keys without a history were removed,
      // not never made; starting a new chain would hide that.
      history = await this.#o.store.listAttestationHistory();
      if (history.length === 0)
        throw new CoreError('error.attestation.history_invalid', 'attestation keys exist but their history is empty');
    }
    if (history.length === 0) {
      const { record: first, seed } = await this.#generate(this.#o.clock.now());
      const entry = makeHistoryEntry(
        null,
        { kid: first.kid, publicKey: first.publicKey, addedAt: Math.floor(first.createdAt / 1000) },
        seed,
      );
      // 'stale': another process started first and wrote entry 1; its key is the one to use.
      await this.#o.store.appendAttestationKey(first, entry, first.createdAt);
      history = await this.#o.store.listAttestationHistory();
    }
    let keys = await this.#o.store.listAttestationKeys();
    if (keys.some((k) => !isSealed(k.privateKey))) {
      // Keys an earlier build stored raw: sealed in place, once, whichever process gets there first.
      try {
        await sealRawKeys(this.#o.box, 'attestation', keys, (kid, from, to) =>
          this.#o.store.resealAttestationKey(kid, from, to),
        );
      } catch (e) {
        throw new CoreError('error.attestation.history_invalid', (e as Error).message);
      }
      keys = await this.#o.store.listAttestationKeys();
    }
    await this.#check(history, keys);
  }

  async #check(history: readonly AttestationHistoryEntry[], keys: readonly AttestationKeyRecord[]): Promise<void> {
    const verified = verifyHistory(history);
    if (!verified.ok)
      throw new CoreError(
        'error.attestation.history_invalid',
        verified.detail ?? 'attestation history does not verify',
      );
    const byKid = new Map(history.map((e) => [e.kid, e]));
    for (const k of keys) {
      const e = byKid.get(k.kid);
      if (!e || e.publicKey !== k.publicKey) {
        throw new CoreError(
          'error.attestation.history_invalid',
          `attestation key ${k.kid} is not the key its history entry names`,
        );
      }
      await this.#seed(k);
    }
    const active = keys.filter((k) => k.retiredAt === null);
    const last = history[history.length - 1];
    if (active.length !== 1 || last === undefined || active[0]!.kid !== last.kid) {
      throw new CoreError(
        'error.attestation.history_invalid',
        'the signing attestation key is not the last entry of the history',
      );
    }
  }

  /**
   * Retires the signing key and appends a new one, vouched for by the retiring key. Appends
   * exactly one entry; a rotation racing another process's is retried on the new chain.
   */
  async rotate(): Promise<AttestationHistoryEntry> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const history = await this.#o.store.listAttestationHistory();
      const keys = await this.#o.store.listAttestationKeys();
      await this.#check(history, keys);
      const last = history[history.length - 1]!;
      const signer = keys.find((k) => k.kid === last.kid)!;
      const now = this.#o.clock.now();
      const { record: next } = await this.#generate(now);
      const entry = makeHistoryEntry(
        last,
        { kid: next.kid, publicKey: next.publicKey, addedAt: Math.floor(now / 1000) },
        await this.#seed(signer),
      );
      if ((await this.#o.store.appendAttestationKey(next, entry, now)) === 'appended') return entry;
    }
    throw new CoreError('error.conflict', 'attestation keys kept rotating underneath; try again');
  }

  /**
   * A signed receipt for a finalized upload: the blob stored under its hash, its size and whose
   * ledger it is charged to, as the store holds them now. Null when no such blob is stored. The
   * signing key is read from the store with the blob (the key table holds one row per rotation,
   * and the reads run together): a rotation committed before this call, by any process, is always
   * the one that signs. Nothing about which key signs is cached, so nothing can go stale.
   */
  async receipt(request: ReceiptRequest): Promise<string | null> {
    const [blob, keys] = await Promise.all([
      guard('error.store.unavailable', 'blob read', () => this.#o.blobs.findBlob(request.contentHash)),
      guard('error.store.unavailable', 'loading attestation keys', () => this.#o.store.listAttestationKeys()),
    ]);
    if (!blob) return null;
    const active = keys.find((k) => k.retiredAt === null);
    if (!active) throw new CoreError('error.internal', 'no active attestation key');
    const now = this.#o.clock.now();
    const claims = receiptClaims(
      {
        issuer: this.#o.issuer,
        uploaderId: request.uploaderId,
        uploadId: request.uploadId,
        contentHash: blob.contentHash,
        size: blob.size,
        chargedTo: blob.chargedTo,
      },
      now,
    );
    return new SignJWT({ ...claims })
      .setProtectedHeader({ alg: 'EdDSA', typ: RECEIPT_TYP, kid: active.kid })
      .sign(await this.#privateKey(active));
  }

  /**
   * The public record, read from the store on each call so a rotation anywhere shows at once. The
   * keys and the history are two reads, and a rotation committing between them would pair a key
   * with a history that does not name it yet (or name the signing key as retired): such a pair is
   * read again, so a client only ever sees the signing key as the history's last entry.
   */
  async record(): Promise<AttestationRecord> {
    for (let attempt = 1; ; attempt++) {
      const [history, keys] = await guard('error.store.unavailable', 'loading attestation keys', () =>
        Promise.all([this.#o.store.listAttestationHistory(), this.#o.store.listAttestationKeys()]),
      );
      if (agree(history, keys)) return recordOf(history, keys);
      if (attempt >= RECORD_READS)
        throw new CoreError('error.store.unavailable', 'the attestation keys kept changing while being read');
    }
  }

  #privateKey(k: AttestationKeyRecord): Promise<CryptoKey> {
    let key = this.#imported.get(k.kid);
    if (!key) {
      key = this.#seed(k).then(
        (seed) =>
          importJWK(
            { kty: 'OKP', crv: 'Ed25519', x: k.publicKey, d: toBase64url(seed) } satisfies JWK,
            'EdDSA',
          ) as Promise<CryptoKey>,
      );
      this.#imported.set(k.kid, key);
      // A failure is not remembered: the next receipt tries again.
      key.catch(() => this.#imported.delete(k.kid));
    }
    return key;
  }
}

/** How often the record is read before a store that keeps rotating is reported unavailable. */
const RECORD_READS = 5;

/** A key set and a history read at one moment: every key is in the history, and the signing key is its last entry. */
function agree(history: readonly AttestationHistoryEntry[], keys: readonly AttestationKeyRecord[]): boolean {
  const named = new Set(history.map((e) => e.kid));
  const signing = keys.filter((k) => k.retiredAt === null);
  return keys.every((k) => named.has(k.kid)) && signing.length === 1 && history.at(-1)?.kid === signing[0]!.kid;
}

function recordOf(
  history: readonly AttestationHistoryEntry[],
  keys: readonly AttestationKeyRecord[],
): AttestationRecord {
  const retired = new Map(keys.map((k) => [k.kid, k.retiredAt]));
  return {
    keys: keys.filter((k) => k.retiredAt === null).map((k) => jwkOf(k.kid, k.publicKey)),
    history: history.map((e) => {
      const at = retired.get(e.kid) ?? null;
      return {
        seq: e.seq,
        kid: e.kid,
        jwk: jwkOf(e.kid, e.publicKey),
        added_at: e.addedAt,
        retired_at: at === null ? null : new Date(at).toISOString(),
        prev: e.prev,
        hash: e.hash,
        sig: e.sig,
      };
    }),
  };
}
